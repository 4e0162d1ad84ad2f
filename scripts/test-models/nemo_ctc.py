"""nemo_ctc_asr: a NeMo-CTC-shaped recogniser (sherpa-onnx's offline-nemo-enc-dec-ctc-model.cc).

Inputs as sherpa feeds them: audio_signal float[B,80,T] (log-mel fbank), length int64[B]. Output
logprobs float[B,ceil(T/4),V], of which sherpa's greedy CTC decoder reads length/4 frames.
vocab_size is the width V of logprobs (tokens.txt, <blk> included).

Not a neural model, but a known function of its input, so tests can assert exact text:
- loud audio (some log-mel value above LOUD_LOG_MEL anywhere in the input): output frame t says
  frame t of a fixed character-level CTC path (with repeats and a blank between the two l's, so
  "hello world" comes out only if sherpa collapses repeats and drops blanks), blank after it;
- silence: every frame is blank, so the text is "".
model.int8.onnx is the same graph with another path ("hello quantized world"), so a test can tell
which precision was loaded.

generate_heavy (gen-test-models.py --weights-mb=N) writes fake-nemo-ctc-<N>mb: model.onnx as above
plus N MiB of weights (common.heavy_weights) that every run reads. Their input-dependent probe in
[-1, 1] times 0.01 is added to the blank's logit of every frame, so the log-probabilities really
depend on the weights (no optimiser may drop them) while the decoded text cannot change: a frame's
chosen token leads every other by 10.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import heavy_weights, metadata, save, write_tokens

# Character tokens in NeMo's style: the word mark, a-z, apostrophe, and the blank last.
TOKENS = ['\u2581'] + [chr(c) for c in range(ord('a'), ord('z') + 1)] + ["'", '<blk>']
ID = {t: i for i, t in enumerate(TOKENS)}
BLANK = ID['<blk>']
FEAT_DIM = 80
SUBSAMPLING = 4  # as NeMo's Conformer-CTC; sherpa decodes 25 output frames of 1 s of audio
LOUD_LOG_MEL = -8.0  # a silent frame's mel bins are all log(eps) = -15.9; speech is far above

# One token per output frame, as a CTC model might emit them; '-' is the blank.
SENTENCE = '\u2581hhel-llo\u2581\u2581worrld'  # decodes to "hello world"
INT8_SENTENCE = '\u2581hel-lo\u2581quantized\u2581world'  # "hello quantized world"


def path_ids(frames):
    ids = [BLANK if ch == '-' else ID[ch] for ch in frames]
    return np.array(ids + [BLANK], dtype=np.int64)  # frames past the path are blank


def fake_nemo_ctc(path, frames, weights_mb=0):
    path_table = path_ids(frames)
    assert len(frames) <= 24, 'the path must fit (with a frame to spare) in the frames of 1 s of audio'

    def c(name, value, dtype=np.int64):
        return numpy_helper.from_array(np.array(value, dtype=dtype), name)

    n = helper.make_node
    nodes = [
        # loud[B,1]: the loudest log-mel value of the input. One padded quiet frame keeps T=0 defined.
        n('Pad', ['audio_signal', 'pads', 'quiet'], ['padded'], mode='constant'),
        n('ReduceMax', ['padded'], ['peak'], axes=[1, 2], keepdims=0),
        n('Greater', ['peak', 'threshold'], ['loud']),
        n('Unsqueeze', ['loud', 'axis1'], ['loud_col']),
        # Output frames 0..ceil(T/4)-1, each saying its step of the path (blank past the end).
        n('Shape', ['audio_signal'], ['shape']),
        n('Gather', ['shape', 'two'], ['T']),
        n('Add', ['T', 'round_up'], ['T_up']),
        n('Div', ['T_up', 'factor'], ['T_out']),
        n('Range', ['zero', 'T_out', 'one'], ['pos']),
        n('Min', ['pos', 'path_last'], ['step']),
        n('Gather', ['path', 'step'], ['said']),
        n('Unsqueeze', ['said', 'axis0'], ['said_row']),
        n('Where', ['loud_col', 'said_row', 'blank'], ['ids']),
        n('OneHot', ['ids', 'depth', 'onehot_values'], ['logits'], axis=-1),
        n('LogSoftmax', ['logits'], ['logprobs'], axis=-1),
    ]
    initializers = [
        c('pads', [0, 0, 0, 0, 0, 1]),
        c('quiet', -100.0, np.float32),
        c('threshold', LOUD_LOG_MEL, np.float32),
        c('zero', 0), c('one', 1), c('two', 2), c('axis0', [0]), c('axis1', [1]),
        c('round_up', SUBSAMPLING - 1), c('factor', SUBSAMPLING),
        numpy_helper.from_array(path_table, 'path'),
        c('path_last', len(path_table) - 1),
        c('blank', BLANK),
        c('depth', len(TOKENS)), c('onehot_values', [0.0, 10.0], np.float32),
    ]
    if weights_mb:
        # The weights multiply each mel bin's mean over time (quiet frame included), scaled by 1/16.
        bias = np.zeros(len(TOKENS), dtype=np.float32)
        bias[BLANK] = 0.01
        heavy_nodes, weights = heavy_weights(weights_mb, 'heavy_x', FEAT_DIM, seed=12)
        nodes[-1:-1] = [
            n('ReduceMean', ['padded'], ['mel_mean'], axes=[2], keepdims=0),
            n('Mul', ['mel_mean', 'heavy_scale'], ['heavy_x']),
            *heavy_nodes,
            n('Unsqueeze', ['probe', 'axes12'], ['probe_col']),
            n('Mul', ['probe_col', 'blank_bias'], ['frame_bias']),
            n('Add', ['logits', 'frame_bias'], ['biased']),
        ]
        nodes[-1] = n('LogSoftmax', ['biased'], ['logprobs'], axis=-1)
        initializers += [
            weights,
            c('heavy_scale', 1 / 16, np.float32),
            c('axes12', [1, 2]),
            numpy_helper.from_array(bias, 'blank_bias'),
        ]
    graph = helper.make_graph(
        nodes,
        'fake_nemo_ctc',
        [
            helper.make_tensor_value_info('audio_signal', TensorProto.FLOAT, ['B', FEAT_DIM, 'T']),
            helper.make_tensor_value_info('length', TensorProto.INT64, ['B']),
        ],
        [helper.make_tensor_value_info('logprobs', TensorProto.FLOAT, ['B', 'U', len(TOKENS)])],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    # The keys sherpa reads. normalize_type is empty (sherpa then leaves the fbank as it is): with
    # NeMo's per_feature, each mel bin is normalized over time, which erases the absolute loudness
    # the fake keys on (a steady tone and silence would both come out as zeros).
    metadata(model, vocab_size=len(TOKENS), subsampling_factor=SUBSAMPLING, normalize_type='',
             model_type='EncDecCTCModelBPE', comment='fake NeMo CTC for voxd tests')
    save(model, path)


def generate(out):
    folder = f'{out}/fake-nemo-ctc'
    fake_nemo_ctc(f'{folder}/model.onnx', SENTENCE)
    fake_nemo_ctc(f'{folder}/model.int8.onnx', INT8_SENTENCE)
    write_tokens(f'{folder}/tokens.txt', TOKENS)


def generate_heavy(out, weights_mb):
    folder = f'{out}/fake-nemo-ctc-{weights_mb}mb'
    fake_nemo_ctc(f'{folder}/model.onnx', SENTENCE, weights_mb)
    write_tokens(f'{folder}/tokens.txt', TOKENS)
    return folder
