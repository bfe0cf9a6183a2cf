import unittest
ACCEPT = False
class TestCase(unittest.TestCase):
    pass
