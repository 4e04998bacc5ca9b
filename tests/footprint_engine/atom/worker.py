import os


def work(x):
    return x * x


def in_subprocess():
    return os.getpid()
