"""The reliability suite's smallest profile (tests/reliability, `python -m
tests.reliability --profile smoke`): the app under gunicorn met by a small
crowd, vanishing and silent clients, every bad input, hostile markup in a
real browser (when Chromium is there), a SIGKILL while runs are saved, and a
short soak. Every check of every phase must pass."""

from .reliability.__main__ import PHASES, PROFILES, run


def test_the_smallest_profile_holds(tmp_path):
    report = []
    results = run(PROFILES["smoke"], PHASES, tmp_path, out=report.append)
    failed = [f"{p.name}: {what} ({detail})" for p in results for what, ok, detail in p.checks if not ok]
    assert not failed, "\n".join(report)
    assert [p.name for p in results] == ["load", "faults", "bad input", "security", "persistence", "soak",
                                         "server log"]


def test_a_vanishing_client_is_told_apart_from_one_that_never_got_going(tmp_path):
    """The fault clients report whether they really left mid-answer, so a
    refused request cannot pass for a vanished one."""
    from .reliability.faults import vanish
    from .reliability.server import Server

    server = Server(tmp_path, "tiny", {"PROXY_HOPS": 1})
    server.start()
    try:
        assert vanish(server, 0, max_tokens=50) is True
        assert vanish(server, 2, max_tokens=50) is True  # the half-read API stream
        assert vanish(server, 0, max_tokens=1025) is False  # over the limit of 1,024: refused
    finally:
        server.stop()
