"""The lesson page's side of the app: the course notes' path through the explorer, one step at a time.

steps   what each step says, asks and answers (marked for the catalog), and the step's link parameter
views   each step's one chart, from the pages' own cached probes and figure builders, and its "explore this" link
keys    the arrow keys, and a new step opened at its top, as small components
"""
