#!/usr/bin/python3
"""Generates the tiny ONNX models in the real shapes that the sherpa-onnx adapter tests load.
No real checkpoint can be downloaded here; these check the plumbing (files found, shapes, sample
rate, metadata), not speech quality. Needs Debian's python3-onnx (apt-get install python3-onnx);
run with /usr/bin/python3 from the repository root. The outputs are committed under test/fixtures.
"""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = 'test/fixtures/models'


def metadata(model, **values):
    for key, value in values.items():
        prop = model.metadata_props.add()
        prop.key = key
        prop.value = str(value)


def save(model, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, path)


# Piper-shaped VITS: input int64[1,T], input_lengths int64[1], scales float[3] -> output float[1,1,T*256]:
# a sine burst per token, frequency 150 + 20*id Hz, amplitude 0.3 * length_scale.
def fake_piper():
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
    save(model, f'{OUT}/fake-piper/model.onnx')
    symbols = ['_', '^', '$', ' ', '!', "'", '(', ')', ',', '-', '.', ':', ';', '?']
    symbols += [chr(c) for c in range(ord('a'), ord('z') + 1)]
    symbols += list('æçðøħŋœǀǁǂǃɐɑɒɓɔɕɖɗɘəɚɛɜɝɞɟɠɡɢɣɤɥɦɧɨɪɫɬɭɮɯɰɱɲɳɴɵɶɸɹɺɻɽɾʀʁʂʃʄʈʉʊʋʌʍʎʏʐʑʒʔʕʘʙʛʜʝʟʡʢʲˈˌːˑ˞βθχᵻⱱ')
    with open(f'{OUT}/fake-piper/tokens.txt', 'w', encoding='utf-8') as f:
        for i, s in enumerate(symbols):
            f.write(f'{s} {i}\n')


# NeMo-CTC-shaped recogniser: audio_signal float[B,80,T], length int64[B] -> logprobs float[B,T,V].
# One random linear layer with the blank (last token) favoured: plumbing only, the text is noise.
def fake_nemo_ctc():
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
    save(model, f'{OUT}/fake-nemo-ctc/model.onnx')
    with open(f'{OUT}/fake-nemo-ctc/tokens.txt', 'w', encoding='utf-8') as f:
        for i, t in enumerate(tokens):
            f.write(f'{t} {i}\n')


# pyannote-shaped segmentation: x float[N,1,16000] -> [N,100,7] powerset logits; frames louder than
# 1e-4 mean energy say "speaker 1", quieter ones "nobody" (energy, not a neural model).
def energy_segmentation():
    nodes = [
        helper.make_node('Reshape', ['x', 'frames_shape'], ['frames']),
        helper.make_node('Mul', ['frames', 'frames'], ['sq']),
        helper.make_node('ReduceMean', ['sq'], ['energy'], axes=[2], keepdims=1),
        helper.make_node('Add', ['energy', 'tiny'], ['energy_eps']),
        helper.make_node('Log', ['energy_eps'], ['log_energy']),
        helper.make_node('Sub', ['log_energy', 'floor'], ['speech']),
        helper.make_node('Neg', ['speech'], ['silence']),
        helper.make_node('Shape', ['speech'], ['speech_shape']),
        helper.make_node('Slice', ['speech_shape', 'zero', 'two'], ['batch_frames']),
        helper.make_node('Concat', ['batch_frames', 'five'], ['rest_shape'], axis=0),
        helper.make_node('Expand', ['minus_big', 'rest_shape'], ['rest']),
        helper.make_node('Concat', ['silence', 'speech', 'rest'], ['logits'], axis=2),
    ]
    consts = [
        numpy_helper.from_array(np.array([-1, 100, 160], dtype=np.int64), 'frames_shape'),
        numpy_helper.from_array(np.array([1e-10], dtype=np.float32), 'tiny'),
        numpy_helper.from_array(np.array([np.log(1e-4)], dtype=np.float32), 'floor'),
        numpy_helper.from_array(np.array([0], dtype=np.int64), 'zero'),
        numpy_helper.from_array(np.array([2], dtype=np.int64), 'two'),
        numpy_helper.from_array(np.array([5], dtype=np.int64), 'five'),
        numpy_helper.from_array(np.array([-1e4], dtype=np.float32), 'minus_big'),
    ]
    graph = helper.make_graph(
        nodes,
        'energy_segmentation',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 1, 16000])],
        [helper.make_tensor_value_info('logits', TensorProto.FLOAT, ['N', 100, 7])],
        initializer=consts,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    metadata(model, sample_rate=16000, window_size=16000, receptive_field_size=400, receptive_field_shift=160,
             num_speakers=3, powerset_max_classes=2, num_classes=7)
    save(model, f'{OUT}/fake-pyannote/segmentation.onnx')


# Speaker-embedding-shaped model: feats float[1,T,80] -> embs [1,160] = centred mean and std of the
# fbank over time (the classical embedding of reference/engines.md, as a wespeaker-style ONNX).
def fbank_stats_embedding():
    nodes = [
        helper.make_node('ReduceMean', ['feats'], ['m'], axes=[1], keepdims=1),
        helper.make_node('Sub', ['feats', 'm'], ['d']),
        helper.make_node('Mul', ['d', 'd'], ['d2']),
        helper.make_node('ReduceMean', ['d2'], ['v'], axes=[1], keepdims=1),
        helper.make_node('Sqrt', ['v'], ['sd']),
        helper.make_node('ReduceMean', ['m'], ['mm'], axes=[2], keepdims=1),
        helper.make_node('Sub', ['m', 'mm'], ['mc']),
        helper.make_node('ReduceMean', ['sd'], ['sm'], axes=[2], keepdims=1),
        helper.make_node('Sub', ['sd', 'sm'], ['sc']),
        helper.make_node('Concat', ['mc', 'sc'], ['cat'], axis=2),
        helper.make_node('Reshape', ['cat', 'shp'], ['embs']),
    ]
    graph = helper.make_graph(
        nodes,
        'fbank_stats_embedding',
        [helper.make_tensor_value_info('feats', TensorProto.FLOAT, [1, 'T', 80])],
        [helper.make_tensor_value_info('embs', TensorProto.FLOAT, [1, 160])],
        initializer=[numpy_helper.from_array(np.array([1, 160], dtype=np.int64), 'shp')],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    metadata(model, framework='wespeaker', output_dim=160, sample_rate=16000, normalize_samples=1, language='any')
    save(model, f'{OUT}/fake-pyannote/embedding.onnx')


if __name__ == '__main__':
    fake_piper()
    fake_nemo_ctc()
    energy_segmentation()
    fbank_stats_embedding()
