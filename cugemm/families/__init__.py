"""Per-family variant tables; cugemm.registry concatenates them in ladder order."""
