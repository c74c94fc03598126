"""The environment a user's shell would have: the CLI builds its Settings from it."""

from __future__ import annotations

import pytest

from storage.kernel.settings import Settings


@pytest.fixture
def env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """This test's store and data folder, as ARCHIVIST_* variables."""
    assert settings.database_url is not None
    monkeypatch.setenv("ARCHIVIST_DATABASE_URL", settings.database_url.get_secret_value())
    monkeypatch.setenv("ARCHIVIST_DATA_DIR", str(settings.data_dir))
    return settings
