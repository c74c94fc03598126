"""The PostgreSQL behind the store: the embedded server's lifecycle, engines, migrations,
opening the store for work and the serving role's scoped connections."""
