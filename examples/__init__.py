"""Examples of using cavbench from the outside (not part of the installed package)."""
