"""Forward passes run for the app, returning plain numbers and numpy arrays (no UI code).

One module per question the app asks; each function is deterministic in its arguments, so the app can cache it by
settings and a link reproduces it exactly.
"""
