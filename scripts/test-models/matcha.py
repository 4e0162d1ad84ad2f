"""matcha_tts: an icefall-Matcha-shaped acoustic model and the two vocoder shapes sherpa-onnx runs.

sherpa tells the vocoders apart by their `model_type` metadata ("vocos" or "hifigan"), not by name.

fake-matcha/      English layout: model-steps-3.onnx (espeak phonemes), tokens.txt, a vocos vocoder
                  (espeak-ng-data/ is not copied: voxd falls back to Debian's).
fake-matcha-zh/   Chinese layout: model-steps-3.onnx (jieba + lexicon.txt), tokens.txt, lexicon.txt,
                  a hifigan vocoder.
fake-matcha-builtin-vocoder/  an acoustic model whose output is the waveform (`audio_output`).
"""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from common import metadata, save, write_tokens

SAMPLE_RATE = 22050
N_MELS = 80
FRAMES_PER_TOKEN = 4  # at length_scale 1; the frame count is tokens * ceil(4 * length_scale)
HOP = 256  # samples per mel frame, as the real 22 kHz vocoders
N_FFT = 1024
VOCOS_BIN = 20  # the one STFT bin the fake vocos fills: 20 * 22050 / 1024 ~ 431 Hz
HIFIGAN_HZ = 300.0


def model(graph, **meta):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    m.ir_version = 8
    metadata(m, **meta)
    return m


# The acoustic model in the icefall export's shape: x int64[1,T], x_length int64[1], noise_scale
# float[1], length_scale float[1], sid int64[1] -> mel float[1,80,F]. Every frame is flat, valued
# 1 + sid, and each token lasts ceil(4 * length_scale) frames, so speed and voice are measurable.
def acoustic_graph():
    consts = [
        numpy_helper.from_array(np.array([0.0], dtype=np.float32), 'zero'),
        numpy_helper.from_array(np.array([1.0], dtype=np.float32), 'one'),
        numpy_helper.from_array(np.array([float(FRAMES_PER_TOKEN)], dtype=np.float32), 'k'),
        numpy_helper.from_array(np.array([1], dtype=np.int64), 'axis1'),
        numpy_helper.from_array(np.array([1, N_MELS, 1], dtype=np.int64), 'mel_shape'),
        numpy_helper.from_array(np.array([1, 1], dtype=np.int64), 'reps_head'),
    ]
    nodes = [
        helper.make_node('Cast', ['x'], ['xf'], to=TensorProto.FLOAT),
        helper.make_node('Mul', ['xf', 'zero'], ['x0']),
        helper.make_node('Mul', ['noise_scale', 'zero'], ['n0']),  # read, as a real model does
        helper.make_node('Add', ['x0', 'n0'], ['x00']),
        helper.make_node('Cast', ['sid'], ['sidf'], to=TensorProto.FLOAT),
        helper.make_node('Add', ['sidf', 'one'], ['gain']),
        helper.make_node('Add', ['x00', 'gain'], ['row']),
        helper.make_node('Unsqueeze', ['row', 'axis1'], ['row3']),
        helper.make_node('Expand', ['row3', 'mel_shape'], ['mel_t']),
        helper.make_node('Mul', ['length_scale', 'k'], ['frames_f']),
        helper.make_node('Ceil', ['frames_f'], ['frames_c']),
        helper.make_node('Cast', ['frames_c'], ['frames'], to=TensorProto.INT64),
        helper.make_node('Concat', ['reps_head', 'frames'], ['reps'], axis=0),
        helper.make_node('Tile', ['mel_t', 'reps'], ['mel']),
    ]
    return helper.make_graph(
        nodes,
        'fake_matcha',
        [
            helper.make_tensor_value_info('x', TensorProto.INT64, [1, 'T']),
            helper.make_tensor_value_info('x_length', TensorProto.INT64, [1]),
            helper.make_tensor_value_info('noise_scale', TensorProto.FLOAT, [1]),
            helper.make_tensor_value_info('length_scale', TensorProto.FLOAT, [1]),
            helper.make_tensor_value_info('sid', TensorProto.INT64, [1]),
        ],
        [helper.make_tensor_value_info('mel', TensorProto.FLOAT, [1, N_MELS, 'F'])],
        initializer=consts,
    )


# Vocos as sherpa-onnx exports it: mels float[1,80,F] -> mag, x, y float[1,513,F]; sherpa forms
# mag * (x + iy) and runs the inverse STFT itself. Only bin 20 is non-zero, with phase 0, so the
# output is a ~431 Hz tone whose amplitude is 0.25 * mel (0.25 for speaker 0, 0.5 for speaker 1).
def fake_vocos():
    bins = N_FFT // 2 + 1
    mask = np.zeros((1, bins, 1), dtype=np.float32)
    # The inverse real FFT turns bin value c into a cosine of amplitude 2c / n_fft.
    mask[0, VOCOS_BIN, 0] = 0.25 * N_FFT / 2
    consts = [
        numpy_helper.from_array(mask, 'mask'),
        numpy_helper.from_array(np.array([0], dtype=np.int64), 'start'),
        numpy_helper.from_array(np.array([1], dtype=np.int64), 'end'),
        numpy_helper.from_array(np.array([1], dtype=np.int64), 'axis1'),
        numpy_helper.from_array(np.array([0.0], dtype=np.float32), 'zero'),
        numpy_helper.from_array(np.array([1.0], dtype=np.float32), 'one'),
    ]
    nodes = [
        helper.make_node('Slice', ['mels', 'start', 'end', 'axis1'], ['first']),
        helper.make_node('Mul', ['first', 'mask'], ['mag']),
        helper.make_node('Mul', ['mag', 'zero'], ['y']),
        helper.make_node('Add', ['y', 'one'], ['x']),
    ]
    graph = helper.make_graph(
        nodes,
        'fake_vocos',
        [helper.make_tensor_value_info('mels', TensorProto.FLOAT, [1, N_MELS, 'F'])],
        [
            helper.make_tensor_value_info('mag', TensorProto.FLOAT, [1, bins, 'F']),
            helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, bins, 'F']),
            helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, bins, 'F']),
        ],
        initializer=consts,
    )
    return model(graph, model_type='vocos', sample_rate=SAMPLE_RATE, n_fft=N_FFT, hop_length=HOP,
                 win_length=N_FFT, center=1, normalized=0, window_type='hann', pad_mode='reflect')


# HiFi-GAN as sherpa-onnx exports it: mel float[1,80,F] -> audio float[1,F*256], the waveform
# itself: 256 samples of a 300 Hz sine per frame, amplitude 0.25 * mel.
def hifigan_graph(mel='mel', audio='audio'):
    t = np.arange(HOP, dtype=np.float32) / SAMPLE_RATE
    wave = (0.25 * np.sin(2 * np.pi * HIFIGAN_HZ * t)).astype(np.float32).reshape(1, HOP)
    consts = [
        numpy_helper.from_array(wave, 'voc_wave'),
        numpy_helper.from_array(np.array([0], dtype=np.int64), 'voc_start'),
        numpy_helper.from_array(np.array([1], dtype=np.int64), 'voc_end'),
        numpy_helper.from_array(np.array([1], dtype=np.int64), 'voc_axis1'),
        numpy_helper.from_array(np.array([1, -1], dtype=np.int64), 'voc_shape'),
    ]
    nodes = [
        helper.make_node('Slice', [mel, 'voc_start', 'voc_end', 'voc_axis1'], ['voc_first']),  # [1,1,F]
        helper.make_node('Transpose', ['voc_first'], ['voc_col'], perm=[0, 2, 1]),  # [1,F,1]
        helper.make_node('MatMul', ['voc_col', 'voc_wave'], ['voc_frames']),  # [1,F,256]
        helper.make_node('Reshape', ['voc_frames', 'voc_shape'], [audio]),
    ]
    return nodes, consts


def fake_hifigan():
    nodes, consts = hifigan_graph()
    graph = helper.make_graph(
        nodes,
        'fake_hifigan',
        [helper.make_tensor_value_info('mel', TensorProto.FLOAT, [1, N_MELS, 'F'])],
        [helper.make_tensor_value_info('audio', TensorProto.FLOAT, [1, 'S'])],
        initializer=consts,
    )
    return model(graph, model_type='hifigan', sample_rate=SAMPLE_RATE)


# An acoustic model with its vocoder built in: sherpa-onnx 1.13.8 takes an output named
# `audio_output` as the waveform and runs no vocoder. Here the hifigan nodes follow the mel.
def builtin_vocoder_graph():
    graph = acoustic_graph()
    nodes, consts = hifigan_graph(mel='mel', audio='audio_output')
    graph.node.extend(nodes)
    graph.initializer.extend(consts)
    del graph.output[:]
    graph.output.append(helper.make_tensor_value_info('audio_output', TensorProto.FLOAT, [1, 'S']))
    graph.name = 'fake_matcha_builtin_vocoder'
    return graph


# The espeak phoneme symbols of the icefall LJSpeech recipe (the same table Piper uses): pad 0,
# bos 1, eos 2.
def phoneme_tokens():
    symbols = ['_', '^', '$', ' ', '!', "'", '(', ')', ',', '-', '.', ':', ';', '?']
    symbols += [chr(c) for c in range(ord('a'), ord('z') + 1)]
    symbols += list('æçðøħŋœǀǁǂǃɐɑɒɓɔɕɖɗɘəɚɛɜɝɞɟɠɡɢɣɤɥɦɧɨɪɫɬɭɮɯɰɱɲɳɴɵɶɸɹɺɻɽɾʀʁʂʃʄʈʉʊʋʌʍʎʏʐʑʒʔʕʘʙʛʜʝʟʡʢʲˈˌːˑ˞βθχᵻⱱ')
    return symbols


def fake_matcha_en(out):
    d = f'{out}/fake-matcha'
    acoustic = model(acoustic_graph(), model_type='matcha-tts', language='English', voice='en-us',
                     has_espeak=1, jieba=0, n_speakers=2, sample_rate=SAMPLE_RATE, version=1,
                     pad_id=0, use_eos_bos=1, add_blank=1)
    save(acoustic, f'{d}/model-steps-3.onnx')
    save(fake_vocos(), f'{d}/vocos-22khz-univ.onnx')
    write_tokens(f'{d}/tokens.txt', phoneme_tokens())


# Chinese (baker) layout: pinyin-initial/final tokens, a lexicon of a few characters.
def fake_matcha_zh(out):
    d = f'{out}/fake-matcha-zh'
    acoustic = model(acoustic_graph(), model_type='matcha-tts', language='Chinese', voice='zh',
                     has_espeak=0, jieba=1, n_speakers=1, sample_rate=SAMPLE_RATE, version=1,
                     pad_id=0, use_eos_bos=0, add_blank=1)
    save(acoustic, f'{d}/model-steps-3.onnx')
    save(fake_hifigan(), f'{d}/hifigan_v2.onnx')
    tokens = ['_', ',', '.', '!', '?', 'n', 'i3', 'h', 'ao3', 'sh', 'ir4', 'j', 'ie4']
    write_tokens(f'{d}/tokens.txt', tokens)
    lexicon = {'你': 'n i3', '好': 'h ao3', '世': 'sh ir4', '界': 'j ie4', '你好': 'n i3 h ao3',
               '世界': 'sh ir4 j ie4'}
    os.makedirs(d, exist_ok=True)
    with open(f'{d}/lexicon.txt', 'w', encoding='utf-8') as f:
        for word, phones in lexicon.items():
            f.write(f'{word} {phones}\n')


def fake_matcha_builtin_vocoder(out):
    d = f'{out}/fake-matcha-builtin-vocoder'
    acoustic = model(builtin_vocoder_graph(), model_type='matcha-tts', language='English', voice='en-us',
                     has_espeak=1, jieba=0, n_speakers=1, sample_rate=SAMPLE_RATE, version=1,
                     pad_id=0, use_eos_bos=1, add_blank=1)
    save(acoustic, f'{d}/model-steps-3.onnx')
    write_tokens(f'{d}/tokens.txt', phoneme_tokens())


def generate(out):
    fake_matcha_builtin_vocoder(out)
    fake_matcha_en(out)
    fake_matcha_zh(out)
