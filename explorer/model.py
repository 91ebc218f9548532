"""The trained model, loaded once per server and shared by every session (weights are read-only)."""

from __future__ import annotations

import streamlit as st

from attn_core.pretrained import (
    GGUF_NAME,
    INSTALL_COMMAND,
    PACKAGE,
    ModelFileMissing,
    ModelNotInstalled,
    ModelPackageMissing,
    PretrainedLM,
    load_pretrained,
)

from .i18n import _


@st.cache_resource(show_spinner=False)  # the spinner is trained_model()'s, in the run's language
def _load() -> PretrainedLM:
    return load_pretrained()


def shared_model() -> PretrainedLM:
    """The same model for code outside a script run (a heal's thread), where there is no page to show a spinner or
    a warning on: raises ModelNotInstalled when it is absent."""
    return _load()


def trained_model() -> PretrainedLM | None:
    """The model, or None after telling the user why it is absent and how to install it (the page then stops, and
    the rest of the app keeps working)."""
    try:
        # st.spinner shows only after half a second: a model already loaded passes without a flicker.
        with st.spinner(_("Loading SmolLM2-135M (the first time: converting its GGUF file, ~10 s)…")):
            return _load()
    except ModelNotInstalled as missing:
        if isinstance(missing, ModelPackageMissing):
            message = _(
                "The trained model is not installed: run `{command}`. Every other page works without it.",
                command=INSTALL_COMMAND,
            )
        elif isinstance(missing, ModelFileMissing):
            message = _(
                "{package} is installed but its file {file} is missing: reinstall with `{command}`. Every other page "
                "works without it.",
                package=PACKAGE,
                file=GGUF_NAME,
                command=INSTALL_COMMAND,
            )
        else:  # unforeseen: attn_core's own words
            message = _("{reason} Every other page works without it.", reason=missing)
        st.warning(message, icon=":material/download:")
        return None
