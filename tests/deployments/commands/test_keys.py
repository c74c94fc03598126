"""archivist keys: a key is shown once, stored only as a hash, listed and revoked by id."""

from __future__ import annotations

from click.testing import CliRunner
from sqlalchemy import text
from sqlalchemy.orm import Session

from deployments.cli import main
from storage.kernel.settings import Settings
from storage.keys import key_hash, resolve_key
from storage.server.engine import open_store


def test_create_list_revoke(env: Settings) -> None:
    runner = CliRunner()
    created = runner.invoke(main, ["keys", "create", "alice", "--read-only", "--label", "laptop"])
    assert created.exit_code == 0, created.output
    key = created.stdout.strip()
    assert key.startswith("ak_") and len(key) == 46
    assert "copy it now, it is not shown again" in created.stderr

    engine = open_store(env).engine
    with engine.connect() as conn:
        row = conn.execute(text("SELECT * FROM api_keys")).mappings().one()
        audit = conn.execute(text("SELECT action, target, details::text FROM audit_log")).all()
    assert row["key_hash"] == key_hash(key)
    assert key not in " ".join(str(v) for v in row.values())  # only the hash and a prefix
    assert key not in " ".join(str(v) for a in audit for v in a)
    assert [a.action for a in audit] == ["key.create"]

    listed = runner.invoke(main, ["keys", "list"])
    assert listed.exit_code == 0
    assert f"{row['id']:>5}  alice  {key[:10]}…  read-only  active  last used never  laptop" in (
        listed.output
    )
    assert key not in listed.output

    revoked = runner.invoke(main, ["keys", "revoke", str(row["id"])])
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    with Session(engine) as session:
        assert resolve_key(session.connection(), key) is None
    assert "revoked 20" in runner.invoke(main, ["keys", "list", "--namespace", "alice"]).output

    unknown = runner.invoke(main, ["keys", "revoke", "9999"])
    assert unknown.exit_code == 1 and "no key 9999" in unknown.output


def test_a_bad_namespace_gets_no_key(env: Settings) -> None:
    result = CliRunner().invoke(main, ["keys", "create", "bob\n"])
    assert result.exit_code == 1 and "bad namespace" in result.output
    assert "Traceback" not in result.output
