"""N_(): the mark of an English message where it is defined (a module constant, a probe's note); it is translated
where shown, with explorer.i18n's _(). Apart from explorer.i18n, which re-exports it, because it speaks no language:
the probes mark their messages with it and never see a language."""


def N_(message: str) -> str:
    """Mark a message for the catalog where it is defined (a module constant); translate it with _() where shown."""
    return message
