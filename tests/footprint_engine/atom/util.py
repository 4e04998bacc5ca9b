def util_fn(x):
    return x - 1
