"""PostgreSQL store of Archivist: engine, tables, migrations and the queries beside them."""
