/**
 * The JSON answers of the inference routes: speech as base64 WAV, the transcript in each
 * response_format, everything the engine gives for a transcription, and the task routes' results.
 * Published as components under their titles.
 */
import { Type } from '@sinclair/typebox';
import { OneOf } from '../request/schema.js';
import { DurationUsage, Segment, SpeakerTurn, StreamTiming, Timing, Word } from './common-responses.js';
import { arrayOf, bool, componentRef, int, num, object, str } from './response-schema.js';

const timing = componentRef(Timing);
const usage = componentRef(DurationUsage);
const speakerTurns = arrayOf(componentRef(SpeakerTurn));
const segments = arrayOf(componentRef(Segment));
const words = arrayOf(componentRef(Word));

export const SpeechJson = object(
  { audio: str('Base64 WAV.'), format: str(), timing },
  ['audio', 'format', 'timing'],
  {
    title: 'SpeechJson',
  },
);

const TranscriptJson = object(
  {
    text: str(),
    language: str('The language heard or asked for, as Whisper names it ("english"); absent when neither.'),
    duration: num('The input audio, in seconds.'),
    usage,
    speaker_turns: speakerTurns,
    sample_rate: int(),
    timing,
  },
  ['text', 'duration', 'usage', 'timing'],
  'response_format json (diarization models add speaker_turns and sample_rate).',
);

const VerboseJson = object(
  {
    task: OneOf(['transcribe', 'translate']),
    language: str(),
    duration: num(),
    text: str(),
    segments: arrayOf(
      object(
        {
          id: int(),
          seek: int(),
          start: num(),
          end: num(),
          text: str(),
          tokens: arrayOf(int()),
          temperature: num(),
          avg_logprob: num(),
          compression_ratio: num(),
          no_speech_prob: num(),
        },
        ['id', 'start', 'end', 'text'],
      ),
    ),
    words: arrayOf(object({ word: str(), start: num(), end: num() }, ['word', 'start', 'end'])),
    usage,
  },
  ['task', 'language', 'duration', 'text', 'usage'],
  'response_format verbose_json; language as Whisper names it ("english"), "unknown" when neither heard nor asked for.',
);

const DiarizedJson = object(
  {
    task: OneOf(['transcribe']),
    duration: num(),
    text: str(),
    segments: arrayOf(
      object(
        {
          type: OneOf(['transcript.text.segment']),
          id: str(),
          start: num(),
          end: num(),
          text: str(),
          speaker: str(),
        },
        ['type', 'id', 'start', 'end', 'text', 'speaker'],
      ),
    ),
    usage,
  },
  ['task', 'duration', 'text', 'segments', 'usage'],
  'response_format diarized_json.',
);

export const Transcription = Type.Union([TranscriptJson, VerboseJson, DiarizedJson], {
  title: 'Transcription',
});

export const TranscriptionDetails = object(
  {
    text: str(),
    language: str(),
    segments,
    speaker_turns: speakerTurns,
    words,
    sample_rate: int(),
    timing,
  },
  ['text', 'timing'],
  { title: 'TranscriptionDetails' },
);

export const TaskResult = object(
  {
    text: str(),
    language: str(),
    audio: str('Base64 WAV.'),
    sample_rate: int(),
    channels: int(),
    segments,
    speaker_turns: speakerTurns,
    words,
    timing,
  },
  ['timing'],
  { title: 'TaskResult' },
);

export const TaskStreamResult = object(
  {
    events: arrayOf(
      object(
        {
          partial_text: object({ text: str(), language: str() }, ['text']),
          audio: str(),
          speaker_turns: speakerTurns,
          word_timestamps: words,
          is_final: bool(),
        },
        ['is_final'],
      ),
    ),
    result: object({ timing: componentRef(StreamTiming) }, ['timing']),
  },
  ['events', 'result'],
  { title: 'TaskStreamResult' },
);
