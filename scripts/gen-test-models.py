#!/usr/bin/python3
"""Generates the tiny ONNX models in the real shapes that the sherpa-onnx adapter tests load.
No real checkpoint can be downloaded here; these check the plumbing (files found, shapes, sample
rate, metadata), not speech quality. Needs Debian's python3-onnx (apt-get install python3-onnx);
run with /usr/bin/python3 from the repository root. The outputs are committed under test/fixtures.

Each scripts/test-models/<family>.py (except common.py) defines generate(out); all are run.
"""
import importlib
import os
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'test-models')
OUT = 'test/fixtures/models'

if __name__ == '__main__':
    sys.path.insert(0, HERE)
    only = set(sys.argv[1:])
    for name in sorted(os.listdir(HERE)):
        module = name[:-3]
        if name.endswith('.py') and module != 'common' and (not only or module in only):
            importlib.import_module(module).generate(OUT)
            print(f'generated {module}')
