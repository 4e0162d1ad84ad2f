"""canary_asr: a NeMo-Canary-shaped encoder/decoder pair, as sherpa-onnx's offline-canary-model.cc runs it.

sherpa feeds the decoder a 9-token prompt (<|startofcontext|> <|startoftranscript|> <|emo:undefined|>
<src> <tgt> <|pnc|>|<|nopnc|> <|noitn|> <|notimestamp|> <|nodiarize|>) one token at a time, then decodes
greedily until <|endoftext|>. The fake decoder keeps every token it was fed as a one-hot row of its
state (the real one keeps a KV cache there), so it can read the prompt back and answers, for audio
with content:

    <greeting in the source language> <"world" in the target language> ["." when <|pnc|>] <|endoftext|>

e.g. src en, tgt en, pnc -> "hello world."; src de, tgt en, nopnc -> "hallo world"; and for digital
silence <|endoftext|> at once (empty text). "Content" is the mean square of the (per-feature
normalised) fbank frames: about 1 for any sound, 0 for digital silence.

fake-canary/ is laid out as sherpa-onnx's -int8 download (encoder.int8.onnx, decoder.int8.onnx,
tokens.txt). fake-canary-fp32/ holds an fp32 encoder.onnx and decoder.onnx for the precision test;
so that test can tell which copy was loaded, the fp32 decoder greets in the target language
(src de, tgt en: "hello world." where the int8 one says "hallo world.").
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import metadata, save, write_tokens

SPECIALS = [
    '<unk>', '<|endoftext|>', '<|startoftranscript|>', '<|startofcontext|>', '<|emo:undefined|>',
    '<|en|>', '<|es|>', '<|de|>', '<|fr|>', '<|pnc|>', '<|nopnc|>', '<|noitn|>', '<|notimestamp|>',
    '<|nodiarize|>', '<pad>',
]
GREETING = {'en': '\u2581hello', 'de': '\u2581hallo', 'es': '\u2581hola', 'fr': '\u2581bonjour'}
WORLD = {'en': '\u2581world', 'de': '\u2581welt', 'es': '\u2581mundo', 'fr': '\u2581monde'}
TOKENS = SPECIALS + list(GREETING.values()) + list(WORLD.values()) + ['.']
ID = {t: i for i, t in enumerate(TOKENS)}
V = len(TOKENS)
FEAT_DIM = 128
PROMPT = 9  # tokens sherpa feeds before the first generated one


def const(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def table(name, matrix, int8):
    """A 0/1 float table; the int8 model stores it as uint8 and dequantizes it, as quantized exports do."""
    if not int8:
        return [const(name, matrix.astype(np.float32))], []
    inits = [const(f'{name}_q', matrix.astype(np.uint8)), const(f'{name}_s', np.float32(1.0)),
             const(f'{name}_z', np.uint8(0))]
    return inits, [helper.make_node('DequantizeLinear', [f'{name}_q', f'{name}_s', f'{name}_z'], [name])]


def onehot(token):
    v = np.zeros((1, V), dtype=np.float32)
    v[0, ID[token]] = 1
    return v


def encoder(int8):
    # x float[1,T,128], x_len int64[1] -> enc_states float[1,T,1] (each frame's mean square),
    # enc_len int64[1], enc_mask bool[1,T]. No subsampling. (No weights: int8 changes nothing here.)
    inits = [const('axis1', np.array([1], dtype=np.int64)), const('zero', np.int64(0)), const('one', np.int64(1))]
    nodes = [
        helper.make_node('Mul', ['x', 'x'], ['sq']),
        helper.make_node('ReduceMean', ['sq'], ['enc_states'], axes=[2], keepdims=1),
        helper.make_node('Identity', ['x_len'], ['enc_len']),
        helper.make_node('Shape', ['x'], ['xshape']),
        helper.make_node('Gather', ['xshape', 'one'], ['T']),
        helper.make_node('Range', ['zero', 'T', 'one'], ['frames']),
        helper.make_node('Unsqueeze', ['frames', 'zero_axis'], ['frames2']),
        helper.make_node('Unsqueeze', ['x_len', 'axis1'], ['len2']),
        helper.make_node('Less', ['frames2', 'len2'], ['enc_mask']),
    ]
    inits.append(const('zero_axis', np.array([0], dtype=np.int64)))
    graph = helper.make_graph(
        nodes,
        'fake_canary_encoder',
        [
            helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 'T', FEAT_DIM]),
            helper.make_tensor_value_info('x_len', TensorProto.INT64, [1]),
        ],
        [
            helper.make_tensor_value_info('enc_states', TensorProto.FLOAT, [1, 'T', 1]),
            helper.make_tensor_value_info('enc_len', TensorProto.INT64, [1]),
            helper.make_tensor_value_info('enc_mask', TensorProto.BOOL, [1, 'T']),
        ],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    # sherpa reads every canary setting from the encoder's metadata.
    metadata(model, model_type='EncDecMultiTaskModel', vocab_size=V, normalize_type='per_feature',
             subsampling_factor=1, feat_dim=FEAT_DIM, num_decoder_layers=1, decoder_hidden_size=V,
             comment='voxd test model: not a speech model' + (' (int8 tables)' if int8 else ''))
    return model


def decoder(int8, greet_in_target=False):
    # decoder_input_ids int32[1,2] (token, position), decoder_mems_list_0 float[1,n,V], enc_states,
    # enc_mask -> logits float[1,1,V], next_decoder_mem_list_0 float[1,n+1,V].
    greet = np.zeros((V, V))
    world = np.zeros((V, V))
    for lang in GREETING:
        greet[ID[f'<|{lang}|>'], ID[GREETING[lang]]] = 1
        world[ID[f'<|{lang}|>'], ID[WORLD[lang]]] = 1
    inits, nodes = [], []
    for name, matrix in [('embed', np.eye(V)), ('greet', greet), ('world', world)]:
        i, n = table(name, matrix, int8)
        inits += i
        nodes += n
    inits += [
        const('pnc_col', onehot('<|pnc|>').reshape(V, 1)),
        const('stop', onehot('.')),
        const('eos', onehot('<|endoftext|>')),
        const('pad_rows', np.zeros((1, 6, V), dtype=np.float32)),
        const('prompt_rows', np.array([3, 4, 5], dtype=np.int64)),
        const('i0', np.int64(0)), const('i1', np.int64(1)), const('i2', np.int64(2)),
        const('s0', np.array([0], dtype=np.int64)), const('s1', np.array([1], dtype=np.int64)),
        const('prompt_len', np.array([PROMPT], dtype=np.int64)),
        const('last_step', np.array([3], dtype=np.int64)),
        const('f1', np.float32(1.0)), const('threshold', np.float32(0.1)), const('margin', np.float32(10.0)),
        const('axis_last', np.array([1], dtype=np.int64)),
    ]
    nodes += [
        # The fed token becomes a one-hot row appended to the state.
        helper.make_node('Cast', ['decoder_input_ids'], ['ids'], to=TensorProto.INT64),
        helper.make_node('Slice', ['ids', 's0', 's1', 's1'], ['token']),
        helper.make_node('Gather', ['embed', 'token'], ['row']),
        helper.make_node('Concat', ['decoder_mems_list_0', 'row'], ['next_decoder_mem_list_0'], axis=1),
        # Prompt rows 3, 4, 5: source language, target language, pnc flag (zero rows while still unfed).
        helper.make_node('Concat', ['next_decoder_mem_list_0', 'pad_rows'], ['padded'], axis=1),
        helper.make_node('Gather', ['padded', 'prompt_rows'], ['prompt'], axis=1),
        helper.make_node('Gather', ['prompt', 'i0'], ['src'], axis=1),
        helper.make_node('Gather', ['prompt', 'i1'], ['tgt'], axis=1),
        helper.make_node('Gather', ['prompt', 'i2'], ['pnc'], axis=1),
        helper.make_node('MatMul', ['tgt' if greet_in_target else 'src', 'greet'], ['say_greeting']),
        helper.make_node('MatMul', ['tgt', 'world'], ['say_world']),
        helper.make_node('MatMul', ['pnc', 'pnc_col'], ['use_pnc']),
        helper.make_node('Sub', ['f1', 'use_pnc'], ['no_pnc']),
        helper.make_node('Mul', ['use_pnc', 'stop'], ['stop_if_pnc']),
        helper.make_node('Mul', ['no_pnc', 'eos'], ['eos_if_nopnc']),
        helper.make_node('Add', ['stop_if_pnc', 'eos_if_nopnc'], ['say_end']),
        helper.make_node('Concat', ['say_greeting', 'say_world', 'say_end', 'eos'], ['script'], axis=0),
        # Step = tokens generated so far (state rows beyond the prompt), clamped to the script.
        helper.make_node('Shape', ['next_decoder_mem_list_0'], ['mshape']),
        helper.make_node('Slice', ['mshape', 's1', 'axis_last_end', 's0'], ['rows']),
        helper.make_node('Sub', ['rows', 'prompt_len'], ['step_raw']),
        helper.make_node('Max', ['step_raw', 's0'], ['step_lo']),
        helper.make_node('Min', ['step_lo', 'last_step'], ['step']),
        helper.make_node('Gather', ['script', 'step'], ['scripted'], axis=0),
        # Content: mean square over the valid encoder frames (0 frames count as silence).
        helper.make_node('Cast', ['enc_mask'], ['maskf'], to=TensorProto.FLOAT),
        helper.make_node('Unsqueeze', ['maskf', 'axes_m1'], ['mask3']),
        helper.make_node('Mul', ['enc_states', 'mask3'], ['masked']),
        helper.make_node('ReduceSum', ['masked'], ['energy'], keepdims=0),
        helper.make_node('ReduceSum', ['maskf'], ['count'], keepdims=0),
        helper.make_node('Max', ['count', 'f1'], ['count1']),
        helper.make_node('Div', ['energy', 'count1'], ['mean_sq']),
        helper.make_node('Greater', ['mean_sq', 'threshold'], ['loud']),
        helper.make_node('Cast', ['loud'], ['s'], to=TensorProto.FLOAT),
        helper.make_node('Sub', ['f1', 's'], ['quiet']),
        helper.make_node('Mul', ['scripted', 's'], ['a']),
        helper.make_node('Mul', ['eos', 'quiet'], ['b']),
        helper.make_node('Add', ['a', 'b'], ['choice']),
        helper.make_node('Mul', ['choice', 'margin'], ['scores']),
        helper.make_node('Unsqueeze', ['scores', 's1'], ['logits']),
    ]
    inits += [const('axis_last_end', np.array([2], dtype=np.int64)), const('axes_m1', np.array([2], dtype=np.int64))]
    graph = helper.make_graph(
        nodes,
        'fake_canary_decoder',
        [
            helper.make_tensor_value_info('decoder_input_ids', TensorProto.INT32, [1, 2]),
            helper.make_tensor_value_info('decoder_mems_list_0', TensorProto.FLOAT, [1, 'n', V]),
            helper.make_tensor_value_info('enc_states', TensorProto.FLOAT, [1, 'T', 1]),
            helper.make_tensor_value_info('enc_mask', TensorProto.BOOL, [1, 'T']),
        ],
        [
            helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 1, V]),
            helper.make_tensor_value_info('next_decoder_mem_list_0', TensorProto.FLOAT, [1, 'n1', V]),
        ],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    return model


def generate(out):
    # As sherpa-onnx distributes sherpa-onnx-nemo-canary-180m-flash-en-es-de-fr-int8.
    folder = f'{out}/fake-canary'
    save(encoder(int8=True), f'{folder}/encoder.int8.onnx')
    save(decoder(int8=True), f'{folder}/decoder.int8.onnx')
    write_tokens(f'{folder}/tokens.txt', TOKENS)
    save(encoder(int8=False), f'{out}/fake-canary-fp32/encoder.onnx')
    save(decoder(int8=False, greet_in_target=True), f'{out}/fake-canary-fp32/decoder.onnx')
