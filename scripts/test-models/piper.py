"""piper_tts: a Piper-shaped VITS voice.

generate_heavy (gen-test-models.py --weights-mb=N) writes fake-piper-<N>mb: the same voice plus N
MiB of weights (common.heavy_weights) that every run reads, multiplying a vector made from the
token ids. round(0.4 * probe), with probe in [-1, 1], is a zero (signed) for any finite input, and
adding a zero leaves every sample bit-for-bit as it was; NaN input would show through it, so even
that term is no constant an optimiser could drop.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import heavy_weights, metadata, save


# Piper-shaped VITS: input int64[1,T], input_lengths int64[1], scales float[3] -> output float[1,1,T*256]:
# a sine burst per token, frequency 150 + 20*id Hz, amplitude 0.3 * length_scale.
def fake_piper(out, weights_mb=0, folder='fake-piper'):
    sr = 22050
    consts = [
        numpy_helper.from_array(np.array([-1, 1], dtype=np.int64), 'col'),
        numpy_helper.from_array(np.array([20.0], dtype=np.float32), 'twenty'),
        numpy_helper.from_array(np.array([150.0], dtype=np.float32), 'base'),
        numpy_helper.from_array((2 * np.pi * np.arange(256) / sr).astype(np.float32).reshape(1, 256), 'tvec'),
        numpy_helper.from_array(np.array([0.3], dtype=np.float32), 'amp'),
        numpy_helper.from_array(np.array(1, dtype=np.int64), 'one'),
        numpy_helper.from_array(np.array([1, 1, -1], dtype=np.int64), 'outshape'),
    ]
    nodes = [
        helper.make_node('Cast', ['input'], ['f'], to=TensorProto.FLOAT),
        helper.make_node('Reshape', ['f', 'col'], ['fc']),
        helper.make_node('Mul', ['fc', 'twenty'], ['f20']),
        helper.make_node('Add', ['f20', 'base'], ['freq']),
        helper.make_node('MatMul', ['freq', 'tvec'], ['phase']),
        helper.make_node('Sin', ['phase'], ['wave']),
        helper.make_node('Mul', ['wave', 'amp'], ['w3']),
        helper.make_node('Gather', ['scales', 'one'], ['ls']),
        helper.make_node('Mul', ['w3', 'ls'], ['w4']),
        helper.make_node('Reshape', ['w4', 'outshape'], ['output']),
    ]
    if weights_mb:
        k = 64
        heavy_nodes, weights = heavy_weights(weights_mb, 'heavy_x', k, seed=12)
        nodes[-1:] = [
            # heavy_x[1,k] = sin(mean token id * (1..k) / k): a vector that varies with the input.
            helper.make_node('ReduceMean', ['f'], ['id_mean'], axes=[1], keepdims=1),
            helper.make_node('Mul', ['id_mean', 'heavy_k'], ['heavy_phase']),
            helper.make_node('Sin', ['heavy_phase'], ['heavy_x']),
            *heavy_nodes,
            helper.make_node('Mul', ['probe', 'heavy_scale'], ['probe_scaled']),
            helper.make_node('Round', ['probe_scaled'], ['probe_zero']),
            helper.make_node('Add', ['w4', 'probe_zero'], ['w5']),
            helper.make_node('Reshape', ['w5', 'outshape'], ['output']),
        ]
        consts += [
            weights,
            numpy_helper.from_array((np.arange(1, k + 1) / k).astype(np.float32).reshape(1, k), 'heavy_k'),
            numpy_helper.from_array(np.array([0.4], dtype=np.float32), 'heavy_scale'),
        ]
    graph = helper.make_graph(
        nodes,
        'fake_piper',
        [
            helper.make_tensor_value_info('input', TensorProto.INT64, [1, 'T']),
            helper.make_tensor_value_info('input_lengths', TensorProto.INT64, [1]),
            helper.make_tensor_value_info('scales', TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info('output', TensorProto.FLOAT, [1, 1, 'S'])],
        initializer=consts,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    metadata(model, model_type='vits', comment='piper', language='English', voice='en-us', has_espeak=1,
             n_speakers=1, sample_rate=sr, add_blank=0, punctuation=';:,.!?¡¿—…"«»“” ')
    save(model, f'{out}/{folder}/model.onnx')
    symbols = ['_', '^', '$', ' ', '!', "'", '(', ')', ',', '-', '.', ':', ';', '?']
    symbols += [chr(c) for c in range(ord('a'), ord('z') + 1)]
    symbols += list('æçðøħŋœǀǁǂǃɐɑɒɓɔɕɖɗɘəɚɛɜɝɞɟɠɡɢɣɤɥɦɧɨɪɫɬɭɮɯɰɱɲɳɴɵɶɸɹɺɻɽɾʀʁʂʃʄʈʉʊʋʌʍʎʏʐʑʒʔʕʘʙʛʜʝʟʡʢʲˈˌːˑ˞βθχᵻⱱ')
    with open(f'{out}/{folder}/tokens.txt', 'w', encoding='utf-8') as f:
        for i, s in enumerate(symbols):
            f.write(f'{s} {i}\n')


def generate(out):
    fake_piper(out)


def generate_heavy(out, weights_mb):
    folder = f'fake-piper-{weights_mb}mb'
    fake_piper(out, weights_mb, folder)
    return f'{out}/{folder}'
