"""The attention masks page's side of the app; pages/masks.py imports the modules it reads.

link      the page's parameters in the link
sections  the page's four sections: the cached probe (explorer.probes.masks), each section's panels, figure on the
          shared grid (explorer/grid.py) and CSV rows, and the padding mask's table and check lines
"""

# The modules another page (the lesson) may import: this page's public face; the others are its own helpers.
PUBLIC = ("link", "sections")
