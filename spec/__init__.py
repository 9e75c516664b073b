"""The stack-file layer: the loader, the typed cluster spec, its errors and the checks a field needs no cloud for."""
