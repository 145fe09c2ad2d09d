"""Numeric solvers. Each accepts variables fixed by screening and knows nothing of the
rules that fixed them."""
