; A deliberately broken file for the CLI tests: line 4 has an unknown mnemonic.
f:
    mov eax, 1
    frobnicate eax
    ret
