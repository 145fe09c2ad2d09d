"""The path step shared by every estimator family: reference, screening, solve,
certificate, repair and report."""
