from atom.base import LIMIT, Base, one, traced
from atom.helpers import helper
from atom.util import util_fn


def scale(x, factor=2):
    return x * factor


@traced
def step(i):
    def inner(j):
        return j + 1

    return inner(scale(i)) + one() + helper(i) + util_fn(i)


class Runner(Base):
    def __init__(self):
        self.size = LIMIT

    @property
    def size(self):
        return self._size

    @size.setter
    def size(self, value):
        self._size = value

    def run(self):
        return [step(i) for i in range(self.size)] + [self.prepare()]
