"""Settings shared by the whole suite."""

import torch

# The app computes with one torch thread per op (app.py); the tests compute as it does. Summation order, and so the
# last bits of a result, depend on the thread count, and AppTest runs app.py inside this process.
torch.set_num_threads(1)
