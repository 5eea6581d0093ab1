print("spool: not yet wired")
