#!/usr/bin/env python3
import sys
print("filled", *sys.argv[1:])
