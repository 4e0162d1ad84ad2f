"""Shared helpers of the test-model generators (see scripts/gen-test-models.py)."""
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper


def metadata(model, **values):
    for key, value in values.items():
        prop = model.metadata_props.add()
        prop.key = key
        prop.value = str(value)


def save(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write_tokens(path, tokens):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        for i, t in enumerate(tokens):
            f.write(f'{t} {i}\n')


def heavy_weights(weights_mb, x, k, seed):
    """Nodes and one initializer that make a fake model weight-heavy (gen-test-models --weights-mb).

    `x` names a float[B,k] tensor computed from the model's input. The nodes compute
    probe[B] = mean over m of tanh(x[b,:] . W[:,m]) with W float[k,M] holding weights_mb MiB of
    seeded random values, so every run reads all of W (a MatMul over every column), and the result
    depends on the input, so constant folding cannot replace W by anything smaller. The tanh before
    the mean keeps it from being rewritten as x times a precomputed row sum of W. probe is finite and
    within [-1, 1] for finite input; each generator adds it where it cannot change what the test
    reads (the decoded text, the audio).
    """
    columns = max(1, round(weights_mb * 2**20 / (4 * k)))
    rng = np.random.default_rng(seed)
    weights = rng.standard_normal((k, columns), dtype=np.float32)
    weights *= np.float32(1 / np.sqrt(k))
    n = helper.make_node
    nodes = [
        n('MatMul', [x, 'heavy_w'], ['heavy_mixed']),  # [B, M]
        n('Tanh', ['heavy_mixed'], ['heavy_squashed']),
        n('ReduceMean', ['heavy_squashed'], ['probe'], axes=[1], keepdims=0),  # [B]
    ]
    return nodes, numpy_helper.from_array(weights, 'heavy_w')
