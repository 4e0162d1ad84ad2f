"""nemo_ctc_asr: a NeMo-CTC-shaped recogniser."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import metadata, save


# NeMo-CTC-shaped recogniser: audio_signal float[B,80,T], length int64[B] -> logprobs float[B,T,V].
# One random linear layer with the blank (last token) favoured: plumbing only, the text is noise.
def fake_nemo_ctc(out):
    tokens = ['\u2581'] + [chr(c) for c in range(ord('a'), ord('z') + 1)] + ["'", '<blk>']
    vocab = len(tokens)
    rng = np.random.default_rng(7)
    weights = (rng.standard_normal((80, vocab)) * 0.05).astype(np.float32)
    bias = np.zeros(vocab, dtype=np.float32)
    bias[-1] = 3.0
    nodes = [
        helper.make_node('Transpose', ['audio_signal'], ['frames'], perm=[0, 2, 1]),
        helper.make_node('MatMul', ['frames', 'w'], ['scores']),
        helper.make_node('Add', ['scores', 'b'], ['logits']),
        helper.make_node('LogSoftmax', ['logits'], ['logprobs'], axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        'fake_nemo_ctc',
        [
            helper.make_tensor_value_info('audio_signal', TensorProto.FLOAT, ['B', 80, 'T']),
            helper.make_tensor_value_info('length', TensorProto.INT64, ['B']),
        ],
        [helper.make_tensor_value_info('logprobs', TensorProto.FLOAT, ['B', 'T', vocab])],
        initializer=[numpy_helper.from_array(weights, 'w'), numpy_helper.from_array(bias, 'b')],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    metadata(model, vocab_size=vocab, subsampling_factor=1, normalize_type='per_feature', model_type='EncDecCTCModelBPE')
    save(model, f'{out}/fake-nemo-ctc/model.onnx')
    with open(f'{out}/fake-nemo-ctc/tokens.txt', 'w', encoding='utf-8') as f:
        for i, t in enumerate(tokens):
            f.write(f'{t} {i}\n')


def generate(out):
    fake_nemo_ctc(out)
