"""Character-level sequence to sequence, after Keras's `lstm_seq2seq` example: an LSTM encoder
hands its final states to an LSTM decoder (teacher forcing); the trained model is saved as
.keras, loaded back, and split into an encoder and a decoder model for greedy decoding.

The task here is tiny and local: translate a word into its reverse."""

import numpy as np

import sluice as keras

rng = np.random.default_rng(0)
letters = "abcdef"
words = ["".join(rng.choice(list(letters), size=rng.integers(2, 5))) for _ in range(96)]
input_texts = words
target_texts = ["\t" + w[::-1] + "\n" for w in words]  # "\t" starts, "\n" ends a target

input_characters = sorted(set("".join(input_texts)))
target_characters = sorted(set("".join(target_texts)))
num_encoder_tokens, num_decoder_tokens = len(input_characters), len(target_characters)
max_encoder_seq_length = max(len(t) for t in input_texts)
max_decoder_seq_length = max(len(t) for t in target_texts)
input_token_index = {c: i for i, c in enumerate(input_characters)}
target_token_index = {c: i for i, c in enumerate(target_characters)}

encoder_input_data = np.zeros((len(words), max_encoder_seq_length, num_encoder_tokens), "float32")
decoder_input_data = np.zeros((len(words), max_decoder_seq_length, num_decoder_tokens), "float32")
decoder_target_data = np.zeros_like(decoder_input_data)
for i, (input_text, target_text) in enumerate(zip(input_texts, target_texts)):
    for t, char in enumerate(input_text):
        encoder_input_data[i, t, input_token_index[char]] = 1.0
    for t, char in enumerate(target_text):
        decoder_input_data[i, t, target_token_index[char]] = 1.0
        if t > 0:  # the target is the decoder input one step ahead
            decoder_target_data[i, t - 1, target_token_index[char]] = 1.0

latent_dim = 16
encoder_inputs = keras.Input(shape=(None, num_encoder_tokens))
encoder = keras.layers.LSTM(latent_dim, return_state=True)
encoder_outputs, state_h, state_c = encoder(encoder_inputs)
encoder_states = [state_h, state_c]

decoder_inputs = keras.Input(shape=(None, num_decoder_tokens))
decoder_lstm = keras.layers.LSTM(latent_dim, return_sequences=True, return_state=True)
decoder_outputs, _, _ = decoder_lstm(decoder_inputs, initial_state=encoder_states)
decoder_dense = keras.layers.Dense(num_decoder_tokens, activation="softmax")
decoder_outputs = decoder_dense(decoder_outputs)

model = keras.Model([encoder_inputs, decoder_inputs], decoder_outputs)
model.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])
history = model.fit(
    [encoder_input_data, decoder_input_data], decoder_target_data,
    batch_size=32, epochs=2, validation_split=0.25, verbose=2,
)  # fmt: skip
assert history.history["loss"][-1] < history.history["loss"][0]
expected = model.predict([encoder_input_data[:4], decoder_input_data[:4]], verbose=0)
model.save("s2s_model.keras")

# Inference: restore the model and build the sampling models from its layers.
model = keras.models.load_model("s2s_model.keras")
np.testing.assert_allclose(
    model.predict([encoder_input_data[:4], decoder_input_data[:4]], verbose=0), expected,
    rtol=1e-5, atol=1e-6,
)  # fmt: skip

encoder_inputs = model.input[0]
encoder_outputs, state_h_enc, state_c_enc = model.layers[2].output
encoder_model = keras.Model(encoder_inputs, [state_h_enc, state_c_enc])

decoder_inputs = model.input[1]
decoder_state_input_h = keras.Input(shape=(latent_dim,))
decoder_state_input_c = keras.Input(shape=(latent_dim,))
decoder_states_inputs = [decoder_state_input_h, decoder_state_input_c]
decoder_lstm = model.layers[3]
decoder_outputs, state_h_dec, state_c_dec = decoder_lstm(
    decoder_inputs, initial_state=decoder_states_inputs
)
decoder_dense = model.layers[4]
decoder_outputs = decoder_dense(decoder_outputs)
decoder_model = keras.Model(
    [decoder_inputs] + decoder_states_inputs, [decoder_outputs, state_h_dec, state_c_dec]
)

reverse_target_char_index = {i: c for c, i in target_token_index.items()}


def decode_sequence(input_seq):
    states_value = encoder_model.predict(input_seq, verbose=0)
    target_seq = np.zeros((1, 1, num_decoder_tokens), "float32")
    target_seq[0, 0, target_token_index["\t"]] = 1.0
    decoded = ""
    while True:
        output_tokens, h, c = decoder_model.predict([target_seq] + states_value, verbose=0)
        char = reverse_target_char_index[int(np.argmax(output_tokens[0, -1, :]))]
        if char == "\n" or len(decoded) > max_decoder_seq_length:
            return decoded
        decoded += char
        target_seq = np.zeros((1, 1, num_decoder_tokens), "float32")
        target_seq[0, 0, target_token_index[char]] = 1.0
        states_value = [h, c]


# The split models compute what the whole model does: the first decoder step agrees.
states = encoder_model.predict(encoder_input_data[:4], verbose=0)
first_step, _, _ = decoder_model.predict([decoder_input_data[:4, :1]] + states, verbose=0)
np.testing.assert_allclose(first_step[:, 0], expected[:, 0], rtol=1e-5, atol=1e-6)
for seq_index in range(2):
    print(
        "Input:",
        input_texts[seq_index],
        "Decoded:",
        decode_sequence(encoder_input_data[seq_index : seq_index + 1]),
    )
