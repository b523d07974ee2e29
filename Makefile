# Builds and installs the C library (header, shared library with a soname, static library,
# pkg-config file). Everyday development uses cargo directly; this is for installing.
#
#   make install PREFIX=/usr/local        # or PREFIX=$HOME/.local; DESTDIR= for staging
#   make uninstall PREFIX=/usr/local
#   cc app.c $(pkg-config --cflags --libs toolnexus)
#
# The release build goes to target/install (not target/release) because its link flags differ
# (the soname); the Python package's build (bindings/python/setup.py) shares it.

PREFIX       ?= /usr/local
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR      ?=
CARGO        ?= cargo
INSTALL      ?= install
CARGO_INSTALL_TARGET_DIR ?= target/install

VERSION := $(shell sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
MAJOR   := $(firstword $(subst ., ,$(VERSION)))
SONAME  := libtoolnexus.so.$(MAJOR)
REAL    := libtoolnexus.so.$(VERSION)
BUILT   := $(CARGO_INSTALL_TARGET_DIR)/release
# What a static link needs besides libtoolnexus.a (rustc --print native-static-libs, Linux).
STATIC_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc

.PHONY: all lib install uninstall

all: lib

lib:
	CARGO_TARGET_DIR=$(CARGO_INSTALL_TARGET_DIR) $(CARGO) rustc --release --lib -p toolnexus-c \
	  --crate-type cdylib,staticlib -- -C link-arg=-Wl,-soname,$(SONAME)

install: lib
	$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR)
	$(INSTALL) -m 0755 $(BUILT)/libtoolnexus.so $(DESTDIR)$(LIBDIR)/$(REAL)
	ln -sfn $(REAL) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(LIBDIR)/libtoolnexus.so
	$(INSTALL) -m 0644 $(BUILT)/libtoolnexus.a $(DESTDIR)$(LIBDIR)/libtoolnexus.a
	$(INSTALL) -m 0644 include/toolnexus.h $(DESTDIR)$(INCLUDEDIR)/toolnexus.h
	printf '%s\n' \
	  'prefix=$(PREFIX)' \
	  'libdir=$(LIBDIR)' \
	  'includedir=$(INCLUDEDIR)' \
	  '' \
	  'Name: toolnexus' \
	  'Description: MCP client with a C ABI (stdio and HTTP servers, tools, elicitation bridge)' \
	  'Version: $(VERSION)' \
	  'Libs: -L$${libdir} -ltoolnexus' \
	  'Libs.private: $(STATIC_LIBS)' \
	  'Cflags: -I$${includedir}' \
	  > $(DESTDIR)$(PKGCONFIGDIR)/toolnexus.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/toolnexus.pc

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(REAL) $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(LIBDIR)/libtoolnexus.so \
	  $(DESTDIR)$(LIBDIR)/libtoolnexus.a $(DESTDIR)$(INCLUDEDIR)/toolnexus.h $(DESTDIR)$(PKGCONFIGDIR)/toolnexus.pc
