"""Forward passes run for the app, returning plain numbers and numpy arrays (no UI code).

One module per question the app asks; each function is deterministic in its arguments, so the app can cache it by
settings and a link reproduces it exactly.
"""

# Largest |difference| between two float32 computations of the same numbers (cached vs full pass, padded vs alone,
# absorbed vs naive) that still counts as agreement: float32 round-off on these layers stays orders of magnitude below.
FLOAT32_TOLERANCE = 1e-5
