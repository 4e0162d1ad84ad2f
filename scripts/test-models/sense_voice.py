"""sense_voice_asr: a SenseVoice-shaped CTC recogniser (sherpa-onnx's offline-sense-voice-model.cc).

Inputs as sherpa feeds them: x float[N,T,560] (80-bin fbank, LFR 7/6, CMVN applied), x_length
int32[N], language int32[N] (a lang_* id from the metadata), text_norm int32[N] (with_itn or
without_itn). Output logits float[N,T+4,V]: four query frames (language, emotion, event, itn tag)
that sherpa strips into result.lang/emotion/event, then the text frames.

The output is a known function of the input, so tests can assert exact text:
- loud audio (some fbank value above 5) -> <|en|> (or the forced language) <|NEUTRAL|> <|Speech|>
  then "hello world" without ITN, "Hello, world." with ITN;
- silence (and audio too short for one LFR frame) -> <|nospeech|> <|EMO_UNKNOWN|> <|Event_UNK|>
  and no text (a forced language still shows in the language tag).
model.int8.onnx is the same graph saying "quantized" between the two words, so a test can tell
which precision was loaded.
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import metadata, save, write_tokens

TOKENS = [
    '<unk>', '<s>', '</s>',
    '<|zh|>', '<|en|>', '<|yue|>', '<|ja|>', '<|ko|>', '<|nospeech|>',
    '<|NEUTRAL|>', '<|EMO_UNKNOWN|>', '<|Speech|>', '<|Event_UNK|>',
    '<|withitn|>', '<|woitn|>',
    '\u2581hello', '\u2581world', '\u2581Hello', ',', '.', '\u2581quantized',
]
ID = {t: i for i, t in enumerate(TOKENS)}
BLANK = 0
# The query ids of the real model (sherpa's lang2id defaults), as the metadata names them.
LANG_IDS = {'auto': 0, 'zh': 3, 'en': 4, 'yue': 7, 'ja': 11, 'ko': 12}
WITH_ITN, WITHOUT_ITN = 14, 15
FEAT_DIM = 80 * 7


def words(plain, itn):
    return [ID[w] for w in plain], [ID[w] for w in itn]


def fake_sense_voice(path, plain, itn):
    vocab = len(TOKENS)
    lang_table = np.full(16, ID['<|en|>'], dtype=np.int64)
    for code, qid in LANG_IDS.items():
        if code != 'auto':
            lang_table[qid] = ID[f'<|{code}|>']
    itn_table = np.full(16, ID['<|woitn|>'], dtype=np.int64)
    itn_table[WITH_ITN] = ID['<|withitn|>']

    # Text frame t says word t; frames past the last word are blank (the table's last entry).
    def word_table(ids):
        return np.array(ids + [BLANK], dtype=np.int64)

    def c(name, value, dtype=np.int64):
        return numpy_helper.from_array(np.array(value, dtype=dtype), name)

    consts = [
        c('pads', [0, 0, 0, 0, 1, 0]),
        c('pad_value', -100.0, np.float32),
        c('threshold', 5.0, np.float32),
        c('zero', 0), c('one', 1), c('axis1', [1]), c('axes12', [1, 2]),
        c('lang_auto', 0, np.int32), c('with_itn', WITH_ITN, np.int32),
        numpy_helper.from_array(lang_table, 'lang_table'),
        numpy_helper.from_array(itn_table, 'itn_table'),
        numpy_helper.from_array(word_table(plain), 'plain_words'),
        numpy_helper.from_array(word_table(itn), 'itn_words'),
        c('plain_last', len(plain)), c('itn_last', len(itn)),
        c('tok_en', ID['<|en|>']), c('tok_nospeech', ID['<|nospeech|>']),
        c('tok_neutral', ID['<|NEUTRAL|>']), c('tok_emo_unknown', ID['<|EMO_UNKNOWN|>']),
        c('tok_speech', ID['<|Speech|>']), c('tok_event_unk', ID['<|Event_UNK|>']),
        c('tok_blank', BLANK),
        c('depth', vocab), c('onehot_values', [0.0, 10.0], np.float32),
    ]
    n = helper.make_node
    nodes = [
        # loud[N]: any feature value above the threshold. One padded frame keeps T=0 defined.
        n('Pad', ['x', 'pads', 'pad_value'], ['xp'], mode='constant'),
        n('ReduceMax', ['xp'], ['peak'], axes=[1, 2], keepdims=0),
        n('Greater', ['peak', 'threshold'], ['loud']),
        n('Unsqueeze', ['loud', 'axis1'], ['loud_col']),
        # Query frames.
        n('Where', ['loud', 'tok_en', 'tok_nospeech'], ['detected']),
        n('Gather', ['lang_table', 'language'], ['forced']),
        n('Equal', ['language', 'lang_auto'], ['is_auto']),
        n('Where', ['is_auto', 'detected', 'forced'], ['q0']),
        n('Where', ['loud', 'tok_neutral', 'tok_emo_unknown'], ['q1']),
        n('Where', ['loud', 'tok_speech', 'tok_event_unk'], ['q2']),
        n('Gather', ['itn_table', 'text_norm'], ['q3']),
        *[n('Unsqueeze', [f'q{i}', 'axis1'], [f'q{i}c']) for i in range(4)],
        # Text frames: positions 0..T-1, clamped to the blank entry of each word table.
        n('Shape', ['x'], ['xshape']),
        n('Gather', ['xshape', 'one'], ['T']),
        n('Range', ['zero', 'T', 'one'], ['pos']),
        n('Min', ['pos', 'plain_last'], ['pos_plain']),
        n('Min', ['pos', 'itn_last'], ['pos_itn']),
        n('Gather', ['plain_words', 'pos_plain'], ['said_plain']),
        n('Gather', ['itn_words', 'pos_itn'], ['said_itn']),
        n('Unsqueeze', ['said_plain', 'zero_axis'], ['said_plain_row']),
        n('Unsqueeze', ['said_itn', 'zero_axis'], ['said_itn_row']),
        n('Equal', ['text_norm', 'with_itn'], ['itn']),
        n('Unsqueeze', ['itn', 'axis1'], ['itn_col']),
        n('Where', ['itn_col', 'said_itn_row', 'said_plain_row'], ['said']),
        n('Where', ['loud_col', 'said', 'tok_blank'], ['text_ids']),
        n('Concat', ['q0c', 'q1c', 'q2c', 'q3c', 'text_ids'], ['ids'], axis=1),
        n('OneHot', ['ids', 'depth', 'onehot_values'], ['logits'], axis=-1),
    ]
    consts.append(c('zero_axis', [0]))
    graph = helper.make_graph(
        nodes,
        'fake_sense_voice',
        [
            helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 'T', FEAT_DIM]),
            helper.make_tensor_value_info('x_length', TensorProto.INT32, ['N']),
            helper.make_tensor_value_info('language', TensorProto.INT32, ['N']),
            helper.make_tensor_value_info('text_norm', TensorProto.INT32, ['N']),
        ],
        [helper.make_tensor_value_info('logits', TensorProto.FLOAT, ['N', 'U', vocab])],
        initializer=consts,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    # Identity CMVN, so the loudness threshold applies to the fbank values themselves.
    metadata(
        model,
        model_type='sense_voice_ctc', comment='fake SenseVoice for voxd tests', vocab_size=vocab,
        blank_id=BLANK, lfr_window_size=7, lfr_window_shift=6, normalize_samples=0,
        with_itn=WITH_ITN, without_itn=WITHOUT_ITN,
        **{f'lang_{code}': qid for code, qid in LANG_IDS.items()},
        neg_mean=','.join(['0'] * FEAT_DIM), inv_stddev=','.join(['1'] * FEAT_DIM),
    )
    save(model, path)


def generate(out):
    folder = f'{out}/fake-sense-voice'
    fake_sense_voice(f'{folder}/model.onnx', *words(['\u2581hello', '\u2581world'],
                                                    ['\u2581Hello', ',', '\u2581world', '.']))
    fake_sense_voice(f'{folder}/model.int8.onnx',
                     *words(['\u2581hello', '\u2581quantized', '\u2581world'],
                            ['\u2581Hello', ',', '\u2581quantized', '\u2581world', '.']))
    write_tokens(f'{folder}/tokens.txt', TOKENS)
