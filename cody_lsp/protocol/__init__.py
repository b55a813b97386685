"""The cody/* protocol, defined once: wire.py (every type and the JSON conversion),
capabilities.py (what `initialize` advertises; standard library only), export.py (the JSON
Schema and the extension's TypeScript types, generated from wire.py)."""
