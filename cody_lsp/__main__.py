"""`python -m cody_lsp` and the `cody-lsp` command: cli.main, loaded here so that a Ctrl+C while
the command's modules load ends it quietly with code 130, never with a traceback."""


def main() -> int:
    try:
        from .cli import main as cli_main
    except KeyboardInterrupt:
        return 130
    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
