def helper(i):
    return i
