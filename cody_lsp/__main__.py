"""`python -m cody_lsp` and the `cody-lsp` command: cli.main, loaded here so that a Ctrl+C while
the command's modules load ends it quietly with code 130, never with a traceback."""


def main() -> int:
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a Ctrl+C inside a class body's __set_name__ comes wrapped (RuntimeError)
        if _interrupted(exc):
            return 130
        raise
    return cli_main()


def _interrupted(exc: BaseException) -> bool:
    """A KeyboardInterrupt is what caused `exc` (Python wraps some, e.g. in __set_name__)."""
    seen: BaseException | None = exc
    for _ in range(20):
        if seen is None:
            return False
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


if __name__ == "__main__":
    raise SystemExit(main())
