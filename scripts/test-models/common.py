"""Shared helpers of the test-model generators (see scripts/gen-test-models.py)."""
import os
import onnx


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
