"""pyannote_diar: pyannote-shaped segmentation and a wespeaker-shaped embedding."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import metadata, save


# pyannote-shaped segmentation: x float[N,1,16000] -> [N,100,7] powerset logits; frames louder than
# 1e-4 mean energy say "speaker 1", quieter ones "nobody" (energy, not a neural model).
def energy_segmentation(out):
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
    save(model, f'{out}/fake-pyannote/segmentation.onnx')


# Speaker-embedding-shaped model: feats float[1,T,80] -> embs [1,160] = centred mean and std of the
# fbank over time (the classical embedding of reference/engines.md, as a wespeaker-style ONNX).
def fbank_stats_embedding(out):
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
    save(model, f'{out}/fake-pyannote/embedding.onnx')


def generate(out):
    energy_segmentation(out)
    fbank_stats_embedding(out)
