print("tokend")
