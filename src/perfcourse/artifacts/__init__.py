"""lessons -> artifacts: execute (papermill), record (the seed schema), render (matplotlib)."""
