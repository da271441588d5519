import pytest

from engine.config import preset
from engine.model import Model


@pytest.fixture(scope="session")
def tiny_config():
    return preset("tiny")


@pytest.fixture(scope="session")
def tiny_model(tiny_config):
    return Model(tiny_config)
