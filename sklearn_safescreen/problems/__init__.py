"""What is solved: problem definitions, their data, objectives and duality gaps."""
