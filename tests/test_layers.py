"""The engine stays a library: NumPy and the standard library, nothing of the web."""

import ast
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "engine"


def imported_top_level_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_engine_imports_only_numpy_and_the_standard_library():
    files = sorted(ENGINE.glob("*.py"))
    assert len(files) > 5
    allowed = set(sys.stdlib_module_names) | {"numpy"}
    for path in files:
        foreign = imported_top_level_modules(path) - allowed
        assert not foreign, f"{path.name} imports {sorted(foreign)}: engine/ is NumPy only"


def test_the_check_sees_a_flask_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy\nfrom flask import Flask\n")
    assert imported_top_level_modules(bad) - set(sys.stdlib_module_names) - {"numpy"} == {"flask"}
