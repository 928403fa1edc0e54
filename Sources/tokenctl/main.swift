print("tokenctl")
