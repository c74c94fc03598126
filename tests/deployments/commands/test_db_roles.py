"""archivist db roles: new passwords for the pipeline and serving roles, set as the owner,
and the one URL each kind of process is to be given."""

from __future__ import annotations

from click.testing import CliRunner
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from deployments.cli import main
from storage.kernel.settings import Settings
from storage.server.engine import open_store
from storage.server.scoped import PIPELINE_ROLE, SERVING_ROLE

VERIFIERS = text(
    "SELECT rolname, rolpassword FROM pg_authid WHERE rolname = ANY(:roles) ORDER BY rolname"
)


def _verifiers(settings: Settings) -> dict[str, str]:
    with open_store(settings).engine.connect() as conn:
        rows = conn.execute(VERIFIERS, {"roles": [PIPELINE_ROLE, SERVING_ROLE]}).tuples()
        return dict(rows.all())


def _printed(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines())


def test_roles_get_passwords_and_each_process_its_url(env: Settings) -> None:
    runner = CliRunner()
    done = runner.invoke(main, ["db", "roles"])
    assert done.exit_code == 0, done.output
    printed = _printed(done.stdout)
    assert set(printed) == {"ARCHIVIST_PIPELINE__DATABASE_URL", "ARCHIVIST_SERVING__DATABASE_URL"}
    assert "not shown again" in done.stderr
    verifiers = _verifiers(env)
    for variable, role in (
        ("ARCHIVIST_PIPELINE__DATABASE_URL", PIPELINE_ROLE),
        ("ARCHIVIST_SERVING__DATABASE_URL", SERVING_ROLE),
    ):
        url = make_url(printed[variable].strip("'"))
        assert url.username == role and url.password and len(url.password) == 32
        assert url.password not in verifiers[role]  # stored only as a SCRAM verifier
        assert verifiers[role].startswith("SCRAM-SHA-256$")
        engine = create_engine(url)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT current_user")).scalar() == role
        engine.dispose()

    again = runner.invoke(main, ["db", "roles", "--role", "serving"])
    assert again.exit_code == 0, again.output
    assert list(_printed(again.stdout)) == ["ARCHIVIST_SERVING__DATABASE_URL"]
    now = _verifiers(env)
    assert now[PIPELINE_ROLE] == verifiers[PIPELINE_ROLE]
    assert now[SERVING_ROLE] != verifiers[SERVING_ROLE]
