#!/usr/bin/python3
"""Generates the tiny ONNX models in the real shapes that the sherpa-onnx adapter tests load.
No real checkpoint can be downloaded here; these check the plumbing (files found, shapes, sample
rate, metadata), not speech quality. Needs Debian's python3-onnx (apt-get install python3-onnx);
run with /usr/bin/python3 from the repository root. The outputs are committed under test/fixtures.

Each scripts/test-models/<family>.py (except common.py) defines generate(out); all are run, or
only the families named on the command line.

Weight-heavy variants, for memory benchmarks (never committed):
  /usr/bin/python3 scripts/gen-test-models.py --weights-mb=300 --out=DIR nemo_ctc [piper]
writes DIR/fake-<family>-300mb, the same fake plus 300 MiB of weights that every run reads and that
cannot change what it outputs (common.heavy_weights); the families with generate_heavy take it.
"""
import importlib
import os
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'test-models')
OUT = 'test/fixtures/models'


def main(argv):
    out = OUT
    weights_mb = 0
    only = set()
    for arg in argv:
        if arg.startswith('--weights-mb='):
            weights_mb = int(arg.split('=', 1)[1])
            # The file is one protobuf, which cannot exceed 2 GiB; sherpa reads it as one buffer.
            if not 0 < weights_mb <= 1900:
                sys.exit('--weights-mb must be between 1 and 1900')
        elif arg.startswith('--out='):
            out = arg.split('=', 1)[1]
        elif arg.startswith('-'):
            sys.exit(f'unknown option {arg}')
        else:
            only.add(arg)
    if weights_mb and out == OUT:
        sys.exit('--weights-mb needs --out=DIR: heavy models do not belong in test/fixtures')
    families = sorted(name[:-3] for name in os.listdir(HERE) if name.endswith('.py') and name != 'common.py')
    unknown = only - set(families)
    if unknown:
        sys.exit(f'unknown families: {", ".join(sorted(unknown))}; expected some of {", ".join(families)}')
    for module in families:
        if only and module not in only:
            continue
        family = importlib.import_module(module)
        if not weights_mb:
            family.generate(out)
            print(f'generated {module}')
        elif hasattr(family, 'generate_heavy'):
            print(f'generated {family.generate_heavy(out, weights_mb)}')
        elif only:
            sys.exit(f'{module} has no weight-heavy variant')


if __name__ == '__main__':
    sys.path.insert(0, HERE)
    main(sys.argv[1:])
