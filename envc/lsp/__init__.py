"""Editor support: the `envc lsp` language server (diagnostics, hover, completion, go-to-definition)."""

from __future__ import annotations


def main() -> None:
    """Run the language server over stdio."""
    from envc.lsp.server import main as serve

    serve()
