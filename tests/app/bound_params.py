"""bound_page.py's view controls, one of each kind: apart from the page, so that a test names a widget by its Param
without running the page."""

from explorer.params import Choice, Flag, IntRange

MODE = Choice("t_mode", ("weights", "scores", "output"), "weights")
VARIANT = Choice("t_variant", ("mha", "mqa", "gqa", "mla"), "gqa")  # narrowed to the chosen variants below
SHOW_MASK = Flag("t_mask", True)
HEAD = IntRange("t_head", 0, 127, 0)  # narrowed to the current head count below
