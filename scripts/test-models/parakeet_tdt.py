"""parakeet_tdt: a NeMo-TDT-transducer-shaped recogniser (encoder, decoder, joiner, tokens.txt).

Not a neural model: the encoder marks each 80 ms frame loud or quiet from the log-mel fbank, the
decoder counts the tokens emitted so far, and the joiner emits the next token of a fixed sentence
on loud frames (blank on quiet ones, and once the sentence is complete) with duration 1. So loud
audio of at least five frames decodes to exactly SENTENCE, silence to "", and the first token's
timestamp is where the loudness starts. The int8 copies emit INT8_SENTENCE instead, so a test can
tell which precision was loaded; their joiner keeps its weights as int8 plus DequantizeLinear.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import metadata, save, write_tokens

TOKENS = ['<unk>', '\u2581par', 'ake', 'et', '\u2581says', '\u2581hello', '\u2581good', 'bye', '\u2581world', '<blk>']
SENTENCE = ['\u2581par', 'ake', 'et', '\u2581says', '\u2581hello']  # "parakeet says hello"
INT8_SENTENCE = ['\u2581good', 'bye', '\u2581world']  # "goodbye world"

FEAT_DIM = 128  # as parakeet-tdt-0.6b; sherpa takes it from the encoder's feat_dim metadata
SUBSAMPLING = 8
NUM_DURATIONS = 5  # TDT durations 0..4 frames
LOUD_LOG_MEL = -8.0  # the loudest mel bin of a quiet frame is log(eps) = -15.9
BLANK = len(TOKENS) - 1


def opset(graph):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    return model


# audio_signal float[B,128,T], length int64[B] -> outputs float[B,1,T/8] (1.0 loud, 0.0 quiet),
# encoded_lengths int64[B]: the loudest mel bin of each 10 ms frame, averaged over 8 frames.
def encoder(path):
    nodes = [
        helper.make_node('ReduceMax', ['audio_signal'], ['peak'], axes=[1], keepdims=1),
        helper.make_node('AveragePool', ['peak'], ['pooled'], kernel_shape=[SUBSAMPLING],
                         strides=[SUBSAMPLING], ceil_mode=1),
        helper.make_node('Greater', ['pooled', 'threshold'], ['loud']),
        helper.make_node('Cast', ['loud'], ['outputs'], to=TensorProto.FLOAT),
        helper.make_node('Add', ['length', 'round_up'], ['padded']),
        helper.make_node('Div', ['padded', 'factor'], ['encoded_lengths']),
    ]
    graph = helper.make_graph(
        nodes,
        'fake_parakeet_tdt_encoder',
        [
            helper.make_tensor_value_info('audio_signal', TensorProto.FLOAT, ['B', FEAT_DIM, 'T']),
            helper.make_tensor_value_info('length', TensorProto.INT64, ['B']),
        ],
        [
            helper.make_tensor_value_info('outputs', TensorProto.FLOAT, ['B', 1, 'U']),
            helper.make_tensor_value_info('encoded_lengths', TensorProto.INT64, ['B']),
        ],
        initializer=[
            numpy_helper.from_array(np.array(LOUD_LOG_MEL, dtype=np.float32), 'threshold'),
            numpy_helper.from_array(np.array(SUBSAMPLING - 1, dtype=np.int64), 'round_up'),
            numpy_helper.from_array(np.array(SUBSAMPLING, dtype=np.int64), 'factor'),
        ],
    )
    model = opset(graph)
    # The keys sherpa's OfflineTransducerNeMoModel reads; "tdt" in url selects TDT decoding.
    metadata(model, vocab_size=len(TOKENS) - 1, normalize_type='', pred_rnn_layers=1, pred_hidden=1,
             subsampling_factor=SUBSAMPLING, feat_dim=FEAT_DIM, model_type='EncDecRNNTBPEModel',
             url='https://huggingface.co/nvidia/parakeet-tdt-0.6b-v2 (fake, generated for voxd tests)',
             comment='Only the transducer branch is exported')
    save(model, path)


# targets int32[B,1], target_length int32[B], states h/c float[1,B,1] -> decoder_output
# float[B,H,1] = one-hot of the number of tokens emitted so far (capped at H-1), target_length,
# states: h counts the non-blank targets fed in, c passes through.
def decoder(path, sentence_len):
    hidden = sentence_len + 1
    nodes = [
        helper.make_node('Equal', ['targets', 'blank'], ['is_blank']),
        helper.make_node('Not', ['is_blank'], ['is_token']),
        helper.make_node('Cast', ['is_token'], ['step'], to=TensorProto.FLOAT),
        helper.make_node('Transpose', ['step'], ['step_lb'], perm=[1, 0]),
        helper.make_node('Unsqueeze', ['step_lb', 'last_axis'], ['step_state']),
        helper.make_node('Add', ['states_h', 'step_state'], ['count']),
        helper.make_node('Min', ['count', 'cap'], ['states_h_next']),
        helper.make_node('Identity', ['states_c'], ['states_c_next']),
        helper.make_node('Identity', ['target_length'], ['target_length_next']),
        helper.make_node('Transpose', ['states_h_next'], ['count_b'], perm=[1, 0, 2]),
        helper.make_node('Equal', ['count_b', 'positions'], ['hot']),
        helper.make_node('Cast', ['hot'], ['decoder_output'], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes,
        'fake_parakeet_tdt_decoder',
        [
            helper.make_tensor_value_info('targets', TensorProto.INT32, ['B', 1]),
            helper.make_tensor_value_info('target_length', TensorProto.INT32, ['B']),
            helper.make_tensor_value_info('states_h', TensorProto.FLOAT, [1, 'B', 1]),
            helper.make_tensor_value_info('states_c', TensorProto.FLOAT, [1, 'B', 1]),
        ],
        [
            helper.make_tensor_value_info('decoder_output', TensorProto.FLOAT, ['B', hidden, 1]),
            helper.make_tensor_value_info('target_length_next', TensorProto.INT32, ['B']),
            helper.make_tensor_value_info('states_h_next', TensorProto.FLOAT, [1, 'B', 1]),
            helper.make_tensor_value_info('states_c_next', TensorProto.FLOAT, [1, 'B', 1]),
        ],
        initializer=[
            numpy_helper.from_array(np.array(BLANK, dtype=np.int32), 'blank'),
            numpy_helper.from_array(np.array([2], dtype=np.int64), 'last_axis'),
            numpy_helper.from_array(np.array(sentence_len, dtype=np.float32), 'cap'),
            numpy_helper.from_array(np.arange(hidden, dtype=np.float32).reshape(1, hidden, 1), 'positions'),
        ],
    )
    save(opset(graph), path)


# encoder_outputs float[B,1,1] (loudness), decoder_outputs float[B,H,1] (one-hot token count) ->
# outputs float[B,1,1,V+5]: token logits then duration logits (sherpa's TDT joiner layout).
def joiner(path, sentence, quantized):
    hidden = len(sentence) + 1
    width = len(TOKENS) + NUM_DURATIONS
    loud = np.zeros((hidden, width), dtype=np.float32)
    for count, token in enumerate(sentence):
        loud[count, TOKENS.index(token)] = 10
    loud[len(sentence), BLANK] = 10  # the sentence is complete
    loud[:, len(TOKENS) + 1] = 10  # duration 1: move to the next frame
    quiet = np.zeros(width, dtype=np.float32)
    quiet[BLANK] = 10
    quiet[len(TOKENS) + 1] = 10
    nodes = [
        helper.make_node('Reshape', ['encoder_outputs', 'flag_shape'], ['is_loud']),
        helper.make_node('Sub', ['one', 'is_loud'], ['is_quiet']),
        helper.make_node('Transpose', ['decoder_outputs'], ['count'], perm=[0, 2, 1]),
        helper.make_node('MatMul', ['count', 'loud_table'], ['loud_scores']),
        helper.make_node('Reshape', ['loud_scores', 'logit_shape'], ['loud_logits']),
        helper.make_node('Mul', ['loud_logits', 'is_loud'], ['a']),
        helper.make_node('Mul', ['quiet_logits', 'is_quiet'], ['b']),
        helper.make_node('Add', ['a', 'b'], ['outputs']),
    ]
    consts = [
        numpy_helper.from_array(np.array([-1, 1, 1, 1], dtype=np.int64), 'flag_shape'),
        numpy_helper.from_array(np.array([-1, 1, 1, width], dtype=np.int64), 'logit_shape'),
        numpy_helper.from_array(np.array(1, dtype=np.float32), 'one'),
        numpy_helper.from_array(quiet, 'quiet_logits'),
    ]
    if quantized:
        # Weight-only int8, as onnxruntime's quantize_dynamic stores a MatMul's weights.
        nodes.insert(0, helper.make_node('DequantizeLinear', ['loud_q', 'scale', 'zero_point'], ['loud_table']))
        consts += [
            numpy_helper.from_array((loud / 0.1).astype(np.int8), 'loud_q'),
            numpy_helper.from_array(np.array(0.1, dtype=np.float32), 'scale'),
            numpy_helper.from_array(np.array(0, dtype=np.int8), 'zero_point'),
        ]
    else:
        consts.append(numpy_helper.from_array(loud, 'loud_table'))
    graph = helper.make_graph(
        nodes,
        'fake_parakeet_tdt_joiner',
        [
            helper.make_tensor_value_info('encoder_outputs', TensorProto.FLOAT, ['B', 1, 1]),
            helper.make_tensor_value_info('decoder_outputs', TensorProto.FLOAT, ['B', hidden, 1]),
        ],
        [helper.make_tensor_value_info('outputs', TensorProto.FLOAT, ['B', 1, 1, width])],
        initializer=consts,
    )
    save(opset(graph), path)


def generate(out):
    folder = f'{out}/fake-parakeet-tdt'
    for suffix, sentence, quantized in (('', SENTENCE, False), ('.int8', INT8_SENTENCE, True)):
        encoder(f'{folder}/encoder{suffix}.onnx')
        decoder(f'{folder}/decoder{suffix}.onnx', len(sentence))
        joiner(f'{folder}/joiner{suffix}.onnx', sentence, quantized)
    write_tokens(f'{folder}/tokens.txt', TOKENS)
