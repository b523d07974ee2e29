# Builds and installs the C library: headers (toolnexus.h, toolnexus.hpp), the stripped shared
# library with a soname and its symlinks, the static library, a pkg-config file and a CMake
# package. Everyday development uses cargo directly; this is for installing.
#
#   make install PREFIX=/usr/local        # or PREFIX=$HOME/.local; DESTDIR= for staging
#   make uninstall PREFIX=/usr/local
#   cc app.c $(pkg-config --cflags --libs toolnexus)
#   find_package(toolnexus) … target_link_libraries(app toolnexus::toolnexus)   # CMake
#
# For a prefix other than /usr and /usr/local, the .pc file's Libs and the CMake target carry an
# rpath to LIBDIR, so programs run without LD_LIBRARY_PATH; for those two the dynamic linker
# finds the library itself, and `make install` runs ldconfig (when not staging with DESTDIR
# and when it may).
#
# The release build goes to target/install (not target/release) because its link flags differ
# (the soname); the Python package's build (bindings/python/setup.py) shares it.
#
# On macOS the library is lib/libtoolnexus.dylib, one file whose install name is
# @rpath/libtoolnexus.dylib (build.rs sets it), so the .pc file and the CMake target always carry
# an rpath to LIBDIR; there is no ldconfig.
#
#   make wheels WHEELHOUSE=DIR            # every release wheel (scripts/wheels.sh): manylinux2014
#                                         # x86_64 and aarch64, musllinux_1_2 x86_64

PREFIX       ?= /usr/local
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR     ?= $(LIBDIR)/cmake/toolnexus
DESTDIR      ?=
CARGO        ?= cargo
INSTALL      ?= install
STRIP        ?= strip
LDCONFIG     ?= ldconfig
CARGO_INSTALL_TARGET_DIR ?= target/install

VERSION := $(shell sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
MAJOR   := $(firstword $(subst ., ,$(VERSION)))
MINOR   := $(word 2,$(subst ., ,$(VERSION)))
BUILT   := $(CARGO_INSTALL_TARGET_DIR)/release
UNAME_S ?= $(shell uname -s)
ifeq ($(UNAME_S),Darwin)
# One file, named @rpath/libtoolnexus.dylib inside (build.rs): no symlinks, no soname flag.
SHARED  := libtoolnexus.dylib
SONAME  := @rpath/libtoolnexus.dylib
REAL    := libtoolnexus.dylib
LIB_LINK_ARGS :=
STRIP_SHARED := -x
STRIP_STATIC := -S
# What a static link needs besides libtoolnexus.a (rustc --print native-static-libs, macOS;
# scripts/test-cross.sh compares). Each framework as one -Wl, word, so that CMake's list keeps
# "-framework" and its name together.
STATIC_LIBS := -Wl,-framework,Security -Wl,-framework,CoreFoundation -liconv -lSystem -lc -lm
else
SHARED  := libtoolnexus.so
SONAME  := libtoolnexus.so.$(MAJOR)
REAL    := libtoolnexus.so.$(VERSION)
LIB_LINK_ARGS := -- -C link-arg=-Wl,-soname,$(SONAME)
STRIP_SHARED := --strip-unneeded
STRIP_STATIC := --strip-debug
# What a static link needs besides libtoolnexus.a (rustc --print native-static-libs, Linux).
STATIC_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
endif
empty :=
space := $(empty) $(empty)
comma := ,
STATIC_LIBS_CMAKE := $(subst $(space),;,$(STATIC_LIBS))
# The system library directories: no rpath there (the dynamic linker's own search path).
SYSTEM_LIBDIRS := /usr/lib /usr/local/lib /usr/lib64 /usr/local/lib64 /lib /lib64 \
  /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu
# (On macOS an @rpath install name needs an rpath wherever the library is.)
IS_SYSTEM := $(if $(filter Darwin,$(UNAME_S)),,$(filter $(patsubst %/,%,$(LIBDIR)),$(SYSTEM_LIBDIRS)))
PC_LIBS := -L$${libdir} $(if $(IS_SYSTEM),,-Wl,-rpath,$${libdir} )-ltoolnexus
CMAKE_RPATH := $(if $(IS_SYSTEM),,-Wl$(comma)-rpath$(comma)$(LIBDIR))

.PHONY: all lib install uninstall wheels

all: lib

lib:
	CARGO_TARGET_DIR=$(CARGO_INSTALL_TARGET_DIR) $(CARGO) rustc --release --lib -p toolnexus-c \
	  --crate-type cdylib,staticlib $(LIB_LINK_ARGS)

WHEELHOUSE ?= target/wheelhouse
wheels:
	scripts/wheels.sh "$(WHEELHOUSE)"

install: lib
	$(INSTALL) -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(CMAKEDIR)
	$(STRIP) $(STRIP_SHARED) -o $(DESTDIR)$(LIBDIR)/$(REAL).tmp $(BUILT)/$(SHARED)
	chmod 0755 $(DESTDIR)$(LIBDIR)/$(REAL).tmp && mv -f $(DESTDIR)$(LIBDIR)/$(REAL).tmp $(DESTDIR)$(LIBDIR)/$(REAL)
ifneq ($(UNAME_S),Darwin)
	ln -sfn $(REAL) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sfn $(SONAME) $(DESTDIR)$(LIBDIR)/$(SHARED)
endif
	$(STRIP) $(STRIP_STATIC) -o $(DESTDIR)$(LIBDIR)/libtoolnexus.a $(BUILT)/libtoolnexus.a
	chmod 0644 $(DESTDIR)$(LIBDIR)/libtoolnexus.a
	$(INSTALL) -m 0644 include/toolnexus.h $(DESTDIR)$(INCLUDEDIR)/toolnexus.h
	$(INSTALL) -m 0644 bindings/cpp/toolnexus.hpp $(DESTDIR)$(INCLUDEDIR)/toolnexus.hpp
	printf '%s\n' \
	  'prefix=$(PREFIX)' \
	  'libdir=$(LIBDIR)' \
	  'includedir=$(INCLUDEDIR)' \
	  '' \
	  'Name: toolnexus' \
	  'Description: MCP client with a C ABI (stdio and HTTP servers, tools, elicitation bridge)' \
	  'Version: $(VERSION)' \
	  'Libs: $(PC_LIBS)' \
	  'Libs.private: $(STATIC_LIBS)' \
	  'Cflags: -I$${includedir}' \
	  > $(DESTDIR)$(PKGCONFIGDIR)/toolnexus.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/toolnexus.pc
	printf '%s\n' \
	  '# toolnexus $(VERSION): find_package(toolnexus) gives the imported target toolnexus::toolnexus' \
	  '# (the shared library; toolnexus::toolnexus_static is the static one). Written by make install.' \
	  'if(NOT TARGET toolnexus::toolnexus)' \
	  '  add_library(toolnexus::toolnexus SHARED IMPORTED)' \
	  '  set_target_properties(toolnexus::toolnexus PROPERTIES' \
	  '    IMPORTED_LOCATION "$(LIBDIR)/$(REAL)"' \
	  '    IMPORTED_SONAME "$(SONAME)"' \
	  '    INTERFACE_INCLUDE_DIRECTORIES "$(INCLUDEDIR)"' \
	  '    INTERFACE_LINK_OPTIONS "$(CMAKE_RPATH)")' \
	  'endif()' \
	  'if(NOT TARGET toolnexus::toolnexus_static)' \
	  '  add_library(toolnexus::toolnexus_static STATIC IMPORTED)' \
	  '  set_target_properties(toolnexus::toolnexus_static PROPERTIES' \
	  '    IMPORTED_LOCATION "$(LIBDIR)/libtoolnexus.a"' \
	  '    INTERFACE_INCLUDE_DIRECTORIES "$(INCLUDEDIR)"' \
	  '    INTERFACE_LINK_LIBRARIES "$(STATIC_LIBS_CMAKE)")' \
	  'endif()' \
	  'set(toolnexus_VERSION "$(VERSION)")' \
	  'set(toolnexus_INCLUDE_DIRS "$(INCLUDEDIR)")' \
	  'set(toolnexus_LIBRARIES toolnexus::toolnexus)' \
	  > $(DESTDIR)$(CMAKEDIR)/toolnexusConfig.cmake
	printf '%s\n' \
	  'set(PACKAGE_VERSION "$(VERSION)")' \
	  '# Compatible: not older than asked, the same major version (for 0.x, the same minor).' \
	  'set(PACKAGE_VERSION_COMPATIBLE TRUE)' \
	  'if(PACKAGE_FIND_VERSION)' \
	  '  if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION OR NOT PACKAGE_FIND_VERSION_MAJOR EQUAL $(MAJOR)' \
	  '     OR ($(MAJOR) EQUAL 0 AND NOT PACKAGE_FIND_VERSION_MINOR EQUAL $(MINOR)))' \
	  '    set(PACKAGE_VERSION_COMPATIBLE FALSE)' \
	  '  elseif(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)' \
	  '    set(PACKAGE_VERSION_EXACT TRUE)' \
	  '  endif()' \
	  'endif()' \
	  > $(DESTDIR)$(CMAKEDIR)/toolnexusConfigVersion.cmake
	chmod 0644 $(DESTDIR)$(CMAKEDIR)/toolnexusConfig.cmake $(DESTDIR)$(CMAKEDIR)/toolnexusConfigVersion.cmake
	@if [ -z "$(DESTDIR)" ] && [ -n "$(IS_SYSTEM)" ] && [ "$(UNAME_S)" != Darwin ]; then \
	  if $(LDCONFIG) 2>/dev/null; then echo "ldconfig: updated the linker cache"; \
	  else echo "note: could not run ldconfig (run it as root so the linker finds $(SONAME))"; fi; \
	fi

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(REAL) $(DESTDIR)$(LIBDIR)/$(notdir $(SONAME)) $(DESTDIR)$(LIBDIR)/$(SHARED) \
	  $(DESTDIR)$(LIBDIR)/libtoolnexus.a $(DESTDIR)$(INCLUDEDIR)/toolnexus.h $(DESTDIR)$(INCLUDEDIR)/toolnexus.hpp \
	  $(DESTDIR)$(PKGCONFIGDIR)/toolnexus.pc $(DESTDIR)$(CMAKEDIR)/toolnexusConfig.cmake \
	  $(DESTDIR)$(CMAKEDIR)/toolnexusConfigVersion.cmake
	-rmdir $(DESTDIR)$(CMAKEDIR) 2>/dev/null
