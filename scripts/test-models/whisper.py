"""whisper_asr: Whisper-shaped encoder/decoder pairs, as sherpa-onnx's offline-whisper-model.cc runs them.

The encoder turns the normalized log-mel input into one number, "loud" (1 when any mel value is
above 0.5: speech-level audio; silence normalizes to -1.5 and the zero tail padding to 0), and
passes it on in n_layer_cross_k/v. The decoder is a bigram table: the logits of a step are the sum
of the table rows of the tokens fed in that step (the whole [sot, lang, task, no_timestamps] prefix
on the first step, one token afterwards), plus, for quiet audio, a large score on eot. So, through
sherpa's greedy search and the real base64 token table:

  language en -> " hello world", de -> " hallo welt", fr -> " bonjour le monde"
  task translate -> " hello world" whatever the language
  auto-detect (the [sot] step, compared over the language tokens): loud -> de, quiet -> en
  quiet audio -> eot at once: empty text
  the int8 decoder (fake-whisper/tiny-decoder.int8.onnx) continues " world" with " again"
  fake-whisper-en (English-only, sot_sequence [sot]) -> " hello world"
"""
import base64
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import metadata, save

WORDS = [' hello', ' world', ' hallo', ' welt', ' bonjour', ' le', ' monde', ' again', ' ']
HELLO, WORLD, HALLO, WELT, BONJOUR, LE, MONDE, AGAIN, BLANK = range(len(WORDS))
EOT = len(WORDS)
SOT = EOT + 1
LANGS = ['en', 'de', 'fr']
LANG_TOKENS = [SOT + 1 + i for i in range(len(LANGS))]
EN, DE, FR = LANG_TOKENS
TRANSLATE = LANG_TOKENS[-1] + 1
TRANSCRIBE = TRANSLATE + 1
SOT_LM = TRANSCRIBE + 1
SOT_PREV = SOT_LM + 1
NO_SPEECH = SOT_PREV + 1
NO_TIMESTAMPS = NO_SPEECH + 1
VOCAB = NO_TIMESTAMPS + 1

N_TEXT_LAYER = 1
N_TEXT_CTX = 32
N_TEXT_STATE = 4


def encoder(path, multilingual):
    consts = [
        numpy_helper.from_array(np.array(0.5, dtype=np.float32), 'threshold'),
        numpy_helper.from_array(np.array([N_TEXT_LAYER, 1, 1, N_TEXT_STATE], dtype=np.int64), 'kv_shape'),
    ]
    nodes = [
        helper.make_node('ReduceMax', ['mel'], ['peak'], keepdims=0),
        helper.make_node('Greater', ['peak', 'threshold'], ['is_loud']),
        helper.make_node('Cast', ['is_loud'], ['loud'], to=TensorProto.FLOAT),
        helper.make_node('Expand', ['loud', 'kv_shape'], ['n_layer_cross_k']),
        helper.make_node('Identity', ['n_layer_cross_k'], ['n_layer_cross_v']),
    ]
    kv = [N_TEXT_LAYER, 1, 1, N_TEXT_STATE]
    graph = helper.make_graph(
        nodes,
        'fake_whisper_encoder',
        [helper.make_tensor_value_info('mel', TensorProto.FLOAT, [1, 80, 'T'])],
        [
            helper.make_tensor_value_info('n_layer_cross_k', TensorProto.FLOAT, kv),
            helper.make_tensor_value_info('n_layer_cross_v', TensorProto.FLOAT, kv),
        ],
        initializer=consts,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    # The keys sherpa-onnx's export-onnx.py writes (sherpa reads them from the encoder).
    values = dict(
        model_type='whisper-tiny' if multilingual else 'whisper-tiny.en',
        version='1',
        maintainer='voxd test fixture',
        n_mels=80,
        n_audio_ctx=1,
        n_audio_state=N_TEXT_STATE,
        n_audio_head=1,
        n_audio_layer=1,
        n_vocab=VOCAB,
        n_text_ctx=N_TEXT_CTX,
        n_text_state=N_TEXT_STATE,
        n_text_head=1,
        n_text_layer=N_TEXT_LAYER,
        sot=SOT,
        sot_index=0,
        eot=EOT,
        blank_id=BLANK,
        is_multilingual=int(multilingual),
        no_speech=NO_SPEECH,
        non_speech_tokens=f'{BLANK}',
        transcribe=TRANSCRIBE,
        translate=TRANSLATE,
        sot_prev=SOT_PREV,
        sot_lm=SOT_LM,
        no_timestamps=NO_TIMESTAMPS,
        sot_sequence=f'{SOT},{EN},{TRANSCRIBE}' if multilingual else f'{SOT}',
        all_language_tokens=','.join(map(str, LANG_TOKENS)),
        all_language_codes=','.join(LANGS),
    )
    if not multilingual:
        del values['all_language_tokens'], values['all_language_codes']
    metadata(model, **values)
    save(model, path)


def decoder(path, table):
    quiet = np.zeros(VOCAB, dtype=np.float32)
    quiet[EOT] = 100.0
    quiet[EN] = 5.0
    consts = [
        numpy_helper.from_array(table, 'table'),
        numpy_helper.from_array(quiet, 'quiet_scores'),
        numpy_helper.from_array(np.array([1], dtype=np.int64), 'token_axis'),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), 'one'),
        numpy_helper.from_array(np.array(0.0, dtype=np.float32), 'zero'),
    ]
    nodes = [
        helper.make_node('Gather', ['table', 'tokens'], ['rows'], axis=0),
        helper.make_node('ReduceSum', ['rows', 'token_axis'], ['row'], keepdims=1),
        helper.make_node('ReduceMax', ['n_layer_cross_k'], ['loud'], keepdims=0),
        helper.make_node('Sub', ['one', 'loud'], ['quiet']),
        helper.make_node('Mul', ['quiet', 'quiet_scores'], ['quiet_row']),
        helper.make_node('Add', ['row', 'quiet_row'], ['scored']),
        # offset and cross_v do not change the scores, but a real decoder reads them.
        helper.make_node('Cast', ['offset'], ['offset_f'], to=TensorProto.FLOAT),
        helper.make_node('ReduceMax', ['n_layer_cross_v'], ['v_peak'], keepdims=0),
        helper.make_node('Add', ['offset_f', 'v_peak'], ['unused']),
        helper.make_node('Mul', ['unused', 'zero'], ['nothing']),
        helper.make_node('Add', ['scored', 'nothing'], ['step']),
        helper.make_node('Shape', ['rows'], ['logits_shape']),
        helper.make_node('Expand', ['step', 'logits_shape'], ['logits']),
        helper.make_node('Identity', ['in_n_layer_self_k_cache'], ['out_n_layer_self_k_cache']),
        helper.make_node('Identity', ['in_n_layer_self_v_cache'], ['out_n_layer_self_v_cache']),
    ]
    cache = [N_TEXT_LAYER, 1, N_TEXT_CTX, N_TEXT_STATE]
    kv = [N_TEXT_LAYER, 1, 1, N_TEXT_STATE]
    graph = helper.make_graph(
        nodes,
        'fake_whisper_decoder',
        [
            helper.make_tensor_value_info('tokens', TensorProto.INT64, [1, 'n_tokens']),
            helper.make_tensor_value_info('in_n_layer_self_k_cache', TensorProto.FLOAT, cache),
            helper.make_tensor_value_info('in_n_layer_self_v_cache', TensorProto.FLOAT, cache),
            helper.make_tensor_value_info('n_layer_cross_k', TensorProto.FLOAT, kv),
            helper.make_tensor_value_info('n_layer_cross_v', TensorProto.FLOAT, kv),
            helper.make_tensor_value_info('offset', TensorProto.INT64, [1]),
        ],
        [
            helper.make_tensor_value_info('logits', TensorProto.FLOAT, [1, 'n_tokens', VOCAB]),
            helper.make_tensor_value_info('out_n_layer_self_k_cache', TensorProto.FLOAT, cache),
            helper.make_tensor_value_info('out_n_layer_self_v_cache', TensorProto.FLOAT, cache),
        ],
        initializer=consts,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    save(model, path)


def bigrams(pairs):
    """A [VOCAB, VOCAB] table: row a scores the tokens that follow a; anything else ends."""
    table = np.zeros((VOCAB, VOCAB), dtype=np.float32)
    table[:, EOT] = 1.0
    for prefix in (SOT, TRANSCRIBE, TRANSLATE, NO_TIMESTAMPS, *LANG_TOKENS):
        table[prefix, EOT] = 0.0
    for a, b, score in pairs:
        table[a, b] = score
    return table


CHAINS = [(HELLO, WORLD, 10), (WORLD, EOT, 10), (HALLO, WELT, 10), (WELT, EOT, 10),
          (BONJOUR, LE, 10), (LE, MONDE, 10), (MONDE, EOT, 10)]
MULTILINGUAL = [(SOT, DE, 1), (EN, HELLO, 10), (DE, HALLO, 10), (FR, BONJOUR, 10), (TRANSLATE, HELLO, 20)]


def write_tokens(path):
    # sherpa's whisper tokens.txt: the base64 of each ordinary token's bytes, then its id.
    with open(path, 'w', encoding='utf-8') as f:
        for i, word in enumerate(WORDS):
            f.write(f'{base64.b64encode(word.encode()).decode()} {i}\n')


def generate(out):
    d = f'{out}/fake-whisper'
    os.makedirs(d, exist_ok=True)
    encoder(f'{d}/tiny-encoder.onnx', True)
    encoder(f'{d}/tiny-encoder.int8.onnx', True)
    decoder(f'{d}/tiny-decoder.onnx', bigrams(MULTILINGUAL + CHAINS))
    again = [(WORLD, EOT, 0), (WORLD, AGAIN, 10), (AGAIN, EOT, 10)]
    decoder(f'{d}/tiny-decoder.int8.onnx', bigrams(MULTILINGUAL + CHAINS + again))
    write_tokens(f'{d}/tiny-tokens.txt')

    d = f'{out}/fake-whisper-en'
    os.makedirs(d, exist_ok=True)
    encoder(f'{d}/tiny.en-encoder.onnx', False)
    decoder(f'{d}/tiny.en-decoder.onnx', bigrams([(SOT, HELLO, 10)] + CHAINS))
    write_tokens(f'{d}/tiny.en-tokens.txt')
