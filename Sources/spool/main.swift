print("spool")
