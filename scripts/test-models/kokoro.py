"""kokoro_tts: Kokoro-shaped voices as sherpa-onnx distributes them (kokoro-en-v0_19 and
kokoro-multi-lang-v1_0), with a few named speakers."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import metadata, save

SR = 24000
SAMPLES_PER_TOKEN = 240
# style_dim as sherpa reads it: (max tokens + 1, 1, style width). Real models: 511,1,256.
STYLE_ROWS, STYLE_WIDTH = 32, 4


# Kokoro's real I/O: tokens int64[1,T] (a 0 at each end), style float[1,W] (voices.bin row T-2 of
# the speaker), speed float[1] -> audio float[N]. Here N = floor(T * 240 / speed) samples of a
# 300 Hz sine (80 samples a period, so its peak is exact) whose amplitude is style[0,0].
def kokoro_graph():
    consts = [
        numpy_helper.from_array(np.array(1, dtype=np.int64), 'one_i'),
        numpy_helper.from_array(np.array(0, dtype=np.int64), 'zero_i'),
        numpy_helper.from_array(np.array([float(SAMPLES_PER_TOKEN)], dtype=np.float32), 'per_token'),
        numpy_helper.from_array(np.array([], dtype=np.int64), 'scalar'),
        numpy_helper.from_array(np.array([2 * np.pi * 300 / SR], dtype=np.float32), 'omega'),
        numpy_helper.from_array(np.array([0], dtype=np.int64), 'first'),
        numpy_helper.from_array(np.array([1], dtype=np.int64), 'first_shape'),
    ]
    nodes = [
        helper.make_node('Shape', ['tokens'], ['shape']),
        helper.make_node('Gather', ['shape', 'one_i'], ['t_len']),
        helper.make_node('Cast', ['t_len'], ['t_f'], to=TensorProto.FLOAT),
        helper.make_node('Mul', ['t_f', 'per_token'], ['n_f1']),
        helper.make_node('Div', ['n_f1', 'speed'], ['n_f2']),
        helper.make_node('Floor', ['n_f2'], ['n_f3']),
        helper.make_node('Cast', ['n_f3'], ['n_i1'], to=TensorProto.INT64),
        helper.make_node('Reshape', ['n_i1', 'scalar'], ['n']),
        helper.make_node('Range', ['zero_i', 'n', 'one_i'], ['idx']),
        helper.make_node('Cast', ['idx'], ['t'], to=TensorProto.FLOAT),
        helper.make_node('Mul', ['t', 'omega'], ['phase']),
        helper.make_node('Sin', ['phase'], ['wave']),
        helper.make_node('Gather', ['style', 'first'], ['row'], axis=0),
        helper.make_node('Gather', ['row', 'first'], ['amp2'], axis=1),
        helper.make_node('Reshape', ['amp2', 'first_shape'], ['amp']),
        helper.make_node('Mul', ['wave', 'amp'], ['audio']),
    ]
    graph = helper.make_graph(
        nodes,
        'fake_kokoro',
        [
            helper.make_tensor_value_info('tokens', TensorProto.INT64, [1, 'sequence_length']),
            helper.make_tensor_value_info('style', TensorProto.FLOAT, [1, STYLE_WIDTH]),
            helper.make_tensor_value_info('speed', TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info('audio', TensorProto.FLOAT, ['audio_length'])],
        initializer=consts,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 14)])
    model.ir_version = 8
    return model


def speaker_metadata(model, version, language, speakers):
    ids = list(range(len(speakers)))
    metadata(
        model,
        model_type='kokoro',
        language=language,
        has_espeak=1,
        sample_rate=SR,
        version=version,
        voice='en-us',
        style_dim=f'{STYLE_ROWS},1,{STYLE_WIDTH}',
        n_speakers=len(speakers),
        speaker2id=','.join(f'{s}->{i}' for s, i in zip(speakers, ids)),
        id2speaker=','.join(f'{i}->{s}' for s, i in zip(speakers, ids)),
        speaker_names=','.join(speakers),
        maintainer='voxd test fixture',
    )


# voices.bin as sherpa's generate_voices_bin.py writes it: each speaker's (rows, 1, width) float32
# style table, speakers in id order. Speaker k's table is all 0.1 * (k + 1): its loudness.
def write_voices(path, n_speakers):
    with open(path, 'wb') as f:
        for k in range(n_speakers):
            f.write(np.full((STYLE_ROWS, 1, STYLE_WIDTH), 0.1 * (k + 1), dtype=np.float32).tobytes())


IPA = 'ɑɐɒæɓʙβɔɕçɗɖðʤəɘɚɛɜɝɞɟʄɡɠɢʛɦɧħɥʜɨɪʝɭɬɫɮʟɱɯɰŋɳɲɴøɵɸθœɶʘɹɺɾɻʀʁɽʂʃʈʧʉʊʋⱱʌɣɤʍχʎʏʑʐʒʔʡʕʢǀǁǂǃˈˌːˑʼʴʰʱʲʷˠˤ˞↓↑→↗↘ᵻ'
LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'


# tokens.txt: one symbol and its id a line; the space is written as "  <id>" (sherpa reads a line
# holding only an id as the space). v0.19's vocabulary has no parentheses; v1.0's has.
def write_tokens(path, punctuation):
    symbols = ['$'] + list(punctuation) + list(LETTERS) + list(IPA)
    assert len(set(symbols)) == len(symbols), 'sherpa exits on a duplicated token'
    with open(path, 'w', encoding='utf-8') as f:
        for i, s in enumerate(symbols):
            f.write(f'{s} {i}\n')


def fake_kokoro_en(out):
    folder = f'{out}/fake-kokoro'
    model = kokoro_graph()
    speakers = ['af', 'af_bella', 'am_adam']
    speaker_metadata(model, 1, 'English', speakers)
    save(model, f'{folder}/model.onnx')
    write_voices(f'{folder}/voices.bin', len(speakers))
    write_tokens(f'{folder}/tokens.txt', ';:,.!?¡¿—…"«»“” ')


# kokoro-multi-lang-v1_0's layout: model version 2, lexicon-us-en.txt and lexicon-zh.txt (a word
# and its phoneme tokens a line). A Chinese character reads through lexicon-zh.txt only, so its
# token count (hence its length in samples) is known exactly.
def fake_kokoro_multi_lang(out):
    folder = f'{out}/fake-kokoro-multi-lang'
    model = kokoro_graph()
    speakers = ['af_maple', 'bf_vale', 'zf_xiaobei']
    speaker_metadata(model, 2, 'multi-lang, e.g., English, Chinese', speakers)
    save(model, f'{folder}/model.onnx')
    write_voices(f'{folder}/voices.bin', len(speakers))
    write_tokens(f'{folder}/tokens.txt', ';:,.!?—…"()“” ')
    with open(f'{folder}/lexicon-us-en.txt', 'w', encoding='utf-8') as f:
        f.write('hello h ə l ˈ o ʊ\nworld w ˈ ɜ ː l d\n')
    with open(f'{folder}/lexicon-zh.txt', 'w', encoding='utf-8') as f:
        f.write('你 n i\n好 x a ʊ\n你好 n i x a ʊ\n')


def generate(out):
    fake_kokoro_en(out)
    fake_kokoro_multi_lang(out)
