"""front: the front ends, which turn what a user gives preemu into the program model (core.program).

`.s` files through Keystone and Capstone (asmfront; asmparse its directive pass; guestcheck refusing
instructions a goroutine may not contain); Go binaries read with the compiler's own tables (gobinary: the
ELF and moduledata, with gopclntab, gofuncdata and gotypes for the pclntab, funcdata and types; godwarf: DWARF; goabi: where results are; gofront: a binary as a Program; elfsym: .symtab in bulk);
Go source built with the right toolchain (gobuild, toolchains, goreleases: what differs per release).

May import: core (layer 2).
"""
